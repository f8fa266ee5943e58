package result

import (
	"strconv"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// The gRPC status codes that have a name (grpc/codes), by number: the keys
// of the summary's "grpc_status" object.
var grpcCodeNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// The gRPC codes replay itself gives an answer (GRPCStatusOf).
const (
	GRPCOK          uint8 = 0
	GRPCUnknown     uint8 = 2
	GRPCUnavailable uint8 = 14
	GRPCInternal    uint8 = 13
)

// GRPCCodeName is the name of gRPC status code c as gRPC spells it
// ("OK", "NOT_FOUND"), or its number for a code without a name ("42").
func GRPCCodeName(c uint8) string {
	if int(c) < len(grpcCodeNames) {
		return grpcCodeNames[c]
	}
	return strconv.Itoa(int(c))
}

// GRPCCode is the gRPC status code of name, as gRPC spells it ("OK",
// "UNAVAILABLE"); false for a name gRPC does not have.
func GRPCCode(name string) (uint8, bool) {
	for c, n := range grpcCodeNames {
		if n == name {
			return uint8(c), true
		}
	}
	return 0, false
}

// GRPCStatusFromHTTP maps the HTTP status of an answer that carries no
// grpc-status (a proxy's 503) to a gRPC code, with gRPC's own table
// (its HTTP-to-gRPC status mapping, as grpc-go applies it): 400 INTERNAL,
// 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 UNIMPLEMENTED, 429, 502,
// 503 and 504 UNAVAILABLE, anything else (200 included: a gRPC server
// always sends grpc-status) UNKNOWN.
func GRPCStatusFromHTTP(status int) uint8 {
	switch status {
	case 400:
		return GRPCInternal
	case 401:
		return 16 // UNAUTHENTICATED
	case 403:
		return 7 // PERMISSION_DENIED
	case 404:
		return 12 // UNIMPLEMENTED
	case 429, 502, 503, 504:
		return GRPCUnavailable
	}
	return GRPCUnknown
}

// GRPCStatusOf is the gRPC status of an answer to a gRPC call: grpc-status
// from its trailers, else from its headers (a Trailers-Only answer puts it
// there), else mapped from the HTTP status (GRPCStatusFromHTTP). A
// grpc-status that is not a decimal number from 0 to 255 is INTERNAL, as
// grpc-go reads a malformed one. It allocates nothing; the recorded answer
// (rrpair.Response) and a live one (Answer) give it the same verdict.
func GRPCStatusOf(status int, headers, trailers []rrpair.Header) uint8 {
	if v, ok := grpcStatusField(trailers); ok {
		return parseGRPCStatus(v)
	}
	if v, ok := grpcStatusField(headers); ok {
		return parseGRPCStatus(v)
	}
	return GRPCStatusFromHTTP(status)
}

// AnswerGRPCStatus is GRPCStatusOf for a live answer.
func AnswerGRPCStatus(a Answer) uint8 {
	if v, ok := grpcStatusField(a.Trailers()); ok {
		return parseGRPCStatus(v)
	}
	if v := a.Header("grpc-status"); v != nil {
		return parseGRPCStatus(v)
	}
	return GRPCStatusFromHTTP(a.Status())
}

func grpcStatusField(hs []rrpair.Header) ([]byte, bool) {
	for i := range hs {
		if rrpair.EqualFold(hs[i].Name, "grpc-status") {
			return hs[i].Value, true
		}
	}
	return nil, false
}

func parseGRPCStatus(v []byte) uint8 {
	if len(v) == 0 || len(v) > 3 {
		return GRPCInternal
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return GRPCInternal
		}
		n = n*10 + int(c-'0')
	}
	if n > 255 {
		return GRPCInternal
	}
	return uint8(n)
}
