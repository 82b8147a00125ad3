package config

// The catalogue's link to Config: a row's field sets the Config field its
// key names (Config.Apply) and reads it back as the key's
// STATIC_BROKER_CONFIG value (StaticBrokerConfigs). A row without one is a
// key no field takes, kept as text in Config.StaticKeys.
//
// A field's set sees a value that already passed the row's type and check
// (Key.Parse), so the bounds a key has are in its row, not here; set only
// maps the value onto the field, including the fields whose zero value
// means Kafka's default and so store another value for an explicit zero
// (replica.fetch.backoff.ms=0 is 1 ms). get reports ok false when the
// configuration leaves the key to its default; an alias (log.retention.hours
// beside log.retention.ms) has no get, so that only the key the field is
// reported under is static.

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// field binds a catalogue key to a Config field.
type field struct {
	// set stores v, the value of key k (the row's name, or its alias).
	set func(c *Config, k string, v configValue) error
	// get is the key's static value; nil for an alias.
	get func(c *Config) (string, bool)
}

// integer is the Go type of an INT, LONG or SHORT field.
type integer interface {
	~int | ~int16 | ~int32 | ~int64
}

// num is an integer field; zero is the default.
func num[T integer](p func(*Config) *T) *field {
	return &field{
		set: func(c *Config, _ string, v configValue) error { *p(c) = T(v.n); return nil },
		get: func(c *Config) (string, bool) {
			n := int64(*p(c))
			return strconv.FormatInt(n, 10), n != 0
		},
	}
}

// numPtr is an integer field whose nil is the default.
func numPtr[T integer](p func(*Config) **T) *field {
	return &field{
		set: func(c *Config, _ string, v configValue) error { n := T(v.n); *p(c) = &n; return nil },
		get: func(c *Config) (string, bool) {
			if n := *p(c); n != nil {
				return strconv.FormatInt(int64(*n), 10), true
			}
			return "", false
		},
	}
}

// scale is n units as a Duration, saturating.
func scale(n int64, unit time.Duration) time.Duration {
	switch {
	case n > math.MaxInt64/int64(unit):
		return math.MaxInt64
	case n < math.MinInt64/int64(unit):
		return math.MinInt64
	}
	return time.Duration(n) * unit
}

// dur is a Duration field read in unit (time.Millisecond for a .ms key);
// zero is the default.
func dur(p func(*Config) *time.Duration, unit time.Duration) *field {
	return &field{
		set: func(c *Config, _ string, v configValue) error { *p(c) = scale(v.n, unit); return nil },
		get: func(c *Config) (string, bool) {
			d := *p(c)
			return strconv.FormatInt(int64(d/unit), 10), d/unit != 0
		},
	}
}

// durPtr is a Duration field whose nil is the default.
func durPtr(p func(*Config) **time.Duration, unit time.Duration) *field {
	return &field{
		set: func(c *Config, _ string, v configValue) error { d := scale(v.n, unit); *p(c) = &d; return nil },
		get: func(c *Config) (string, bool) {
			if d := *p(c); d != nil {
				return strconv.FormatInt(int64(*d/unit), 10), true
			}
			return "", false
		},
	}
}

// flag is a boolean field whose nil is the default.
func flag(p func(*Config) **bool) *field {
	return &field{
		set: func(c *Config, _ string, v configValue) error { b := v.b; *p(c) = &b; return nil },
		get: func(c *Config) (string, bool) {
			if b := *p(c); b != nil {
				return strconv.FormatBool(*b), true
			}
			return "", false
		},
	}
}

// onFlag is a boolean field whose default is false: only true is static.
func onFlag(p func(*Config) *bool) *field {
	return &field{
		set: func(c *Config, _ string, v configValue) error { *p(c) = v.b; return nil },
		get: func(c *Config) (string, bool) { return "true", *p(c) },
	}
}

// text is a string field; "" is the default.
func text(p func(*Config) *string) *field {
	return &field{
		set: func(c *Config, _ string, v configValue) error { *p(c) = v.s; return nil },
		get: func(c *Config) (string, bool) { s := *p(c); return s, s != "" },
	}
}

// textPtr is a string field whose nil is the default.
func textPtr(p func(*Config) **string) *field {
	return &field{
		set: func(c *Config, _ string, v configValue) error { s := v.s; *p(c) = &s; return nil },
		get: func(c *Config) (string, bool) {
			if s := *p(c); s != nil {
				return *s, true
			}
			return "", false
		},
	}
}

// double is a DOUBLE field; zero is the default.
func double(p func(*Config) *float64) *field {
	return &field{
		set: func(c *Config, _ string, v configValue) error { *p(c) = v.f; return nil },
		get: func(c *Config) (string, bool) { f := *p(c); return formatDouble(f), f != 0 },
	}
}

// doublePtr is a DOUBLE field whose nil is the default.
func doublePtr(p func(*Config) **float64) *field {
	return &field{
		set: func(c *Config, _ string, v configValue) error { f := v.f; *p(c) = &f; return nil },
		get: func(c *Config) (string, bool) {
			if f := *p(c); f != nil {
				return formatDouble(*f), true
			}
			return "", false
		},
	}
}

// alias sets what f sets but is not reported: another key reports the field.
func alias(f *field) *field { return &field{set: f.set} }

// retention is a time limit where a negative value is no limit (-1), in
// unit; zero is the default.
func retention(p func(*Config) *time.Duration, unit time.Duration) *field {
	return &field{
		set: func(c *Config, _ string, v configValue) error {
			if v.n < 0 {
				*p(c) = -1
			} else {
				*p(c) = scale(v.n, unit)
			}
			return nil
		},
		get: func(c *Config) (string, bool) {
			d := *p(c)
			if d < 0 {
				return "-1", true
			}
			return strconv.FormatInt(int64(d/unit), 10), d/unit != 0
		},
	}
}

// msOrNeverField is a .ms limit where a negative value is never (-1) and a
// positive one at least 1 ms; zero is the default.
func msOrNeverField(p func(*Config) *time.Duration) *field {
	return &field{
		set: func(c *Config, _ string, v configValue) error { *p(c) = msOrNever(v.n); return nil },
		get: func(c *Config) (string, bool) {
			d := *p(c)
			return strconv.FormatInt(max(d.Milliseconds(), -1), 10), d != 0
		},
	}
}

// zeroAs is an integer field where an explicit zero is stored as instead
// (the zero value means the default), and reported as 0 again.
func zeroAs[T integer](p func(*Config) *T, as T) *field {
	return &field{
		set: func(c *Config, _ string, v configValue) error {
			*p(c) = T(v.n)
			if v.n == 0 {
				*p(c) = as
			}
			return nil
		},
		get: func(c *Config) (string, bool) {
			n := *p(c)
			if n == as {
				n = 0
			}
			return strconv.FormatInt(int64(n), 10), *p(c) != 0
		},
	}
}

// custom is a field with its own mapping.
func custom(set func(c *Config, k string, v configValue) error, get func(c *Config) (string, bool)) *field {
	return &field{set: set, get: get}
}

// list is a LIST field of trimmed, non-empty entries; nil is the default.
func list(p func(*Config) *[]string) *field {
	return &field{
		set: func(c *Config, _ string, v configValue) error { *p(c) = splitList(v.s); return nil },
		get: func(c *Config) (string, bool) {
			l := *p(c)
			return strings.Join(l, ","), l != nil
		},
	}
}
