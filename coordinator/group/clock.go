package group

import "time"

// Clock is the coordinator's source of time and timers: the wall clock in
// the broker, a manual one in tests.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d, unless stopped.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer from a Clock.
type Timer interface {
	// Stop prevents the call if it has not happened yet.
	Stop() bool
}

// WallClock is the real clock.
type WallClock struct{}

// Now implements Clock.
func (WallClock) Now() time.Time { return time.Now() }

// AfterFunc implements Clock.
func (WallClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
