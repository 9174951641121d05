package stream

import "strconv"

// An Error ends the read of an event stream that failed after its first
// event reached the caller, and was not resumed: a stream that is not a
// GET (a generation asked for by a POST, which a resend would run and
// charge again), one whose server set no event ID, one whose resumes
// failed or ran out. What the caller read is whole events, never part of
// one, and never the start of another attempt's.
type Error struct {
	// Read is how many bytes of the stream the caller was given, and
	// Events how many events they held.
	Read   int64
	Events int64
	// Resumes is how many times the stream was resumed before it ended.
	Resumes int
	// Err is the failure that ended the stream: the body's, or that of its
	// last resume.
	Err error
}

func (e *Error) Error() string {
	return "retryhttp: event stream failed after " + strconv.FormatInt(e.Events, 10) + " events (" +
		strconv.FormatInt(e.Read, 10) + " bytes) read, " + strconv.Itoa(e.Resumes) + " resumes: " + errString(e.Err)
}

// Unwrap returns the failure that ended the stream.
func (e *Error) Unwrap() error { return e.Err }

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
