package zk

// waiting holds the requests a term Stepped into the core and has not
// answered yet, by the id the core answers them with (the term's own
// numbering). Only the loop's goroutine uses it.
type waiting[C any] struct {
	calls map[uint64]C
	id    uint64
}

// add keeps call and returns its id.
func (w *waiting[C]) add(call C) uint64 {
	if w.calls == nil {
		w.calls = map[uint64]C{}
	}
	w.id++
	w.calls[w.id] = call
	return w.id
}

// take removes and returns the call of id, if it is held.
func (w *waiting[C]) take(id uint64) (C, bool) {
	call, ok := w.calls[id]
	delete(w.calls, id)
	return call, ok
}

// drain removes every call held, passing each to f.
func (w *waiting[C]) drain(f func(C)) {
	for id, call := range w.calls {
		delete(w.calls, id)
		f(call)
	}
}
