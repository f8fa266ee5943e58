//go:build !linux

package conn

// No Exchange here (CanExchange is false: no raw descriptor).
func (l *Line) exchangeStep(uintptr) bool { return true }

func (cn *Conn) opError(_ string, err error) error { return err }
