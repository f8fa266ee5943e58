package mock

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkAnswer is the work of one hit without the wire: the live
// request's signature (a JSON body with its keys in another order),
// the lookup, the k-th answer, its decoding from the mapping.
func BenchmarkAnswer(b *testing.B) {
	var f strings.Builder
	for i := range 10000 {
		f.WriteString(rec{method: "POST", uri: "/v1/items/" + strconv.Itoa(i%1000) + "?page=" + strconv.Itoa(i%10), host: "api.internal",
			reqBody: `{"id":` + strconv.Itoa(i) + `,"name":"item","tags":["a","b"],"customer":{"id":"c","tier":"gold"}}`,
			status:  200, resBody: `{"status":"ok","items":[{"sku":"s","qty":1}]}`}.line())
	}
	s := start(b, Options{File: writeFile(b, f.String())})
	body := []byte(`{"customer": {"tier": "gold", "id": "c"}, "tags": ["a", "b"], "name": "item", "id": 4321}`)
	l := live{v: view{method: []byte("POST"), host: []byte("api.internal"), uri: []byte("/v1/items/321?page=1"), body: body}, cs: &connState{}}
	b.ReportAllocs()
	for b.Loop() {
		sc := s.getScratch()
		o := s.answer(&l, sc)
		if o.status != 200 {
			b.Fatalf("status %d", o.status)
		}
		s.putScratch(sc)
	}
}
