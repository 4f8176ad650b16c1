package filehost

// Fault is a failure of one download of a file: Status answers that HTTP status (Serve
// writes it with no body); Cut, whatever Status says, sends the headers with the whole
// Content-Length and half the bytes, then drops the connection.
type Fault struct {
	Status int
	Cut    bool
}

// Faults is the queue of one file's pending download faults, oldest first; the zero value
// has none. It is not safe for concurrent use: a fake keeps it in its file and guards it with
// the lock that guards the file.
type Faults struct {
	pending []Fault
}

// Fail makes the next n downloads that take from q, after those already pending, fail with f.
func (q *Faults) Fail(n int, f Fault) {
	for range n {
		q.pending = append(q.pending, f)
	}
}

// Take removes the oldest pending fault and returns it, or nil when none is pending: the
// fault the download being answered must fail with.
func (q *Faults) Take() *Fault {
	if len(q.pending) == 0 {
		return nil
	}
	f := q.pending[0]
	q.pending = q.pending[1:]
	return &f
}
