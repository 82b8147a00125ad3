package main

// The record format of sluice consume (--format).

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// formatPart is one piece of a parsed format: literal bytes, or a verb
// (one of the letters after % in consumeUsage).
type formatPart struct {
	literal []byte
	verb    byte // 0 for a literal
}

// parseFormat parses a --format string: %-verbs, \-escapes, literal text.
func parseFormat(s string) ([]formatPart, error) {
	var parts []formatPart
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			parts = append(parts, formatPart{literal: lit})
			lit = nil
		}
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch != '%' && ch != '\\' {
			lit = append(lit, ch)
			continue
		}
		if i+1 == len(s) {
			return nil, fmt.Errorf("--format %q: ends in a lone %c", s, ch)
		}
		i++
		next := s[i]
		if ch == '\\' {
			switch next {
			case 'n':
				lit = append(lit, '\n')
			case 't':
				lit = append(lit, '\t')
			case 'r':
				lit = append(lit, '\r')
			case '\\':
				lit = append(lit, '\\')
			default:
				return nil, fmt.Errorf("--format %q: unknown escape \\%c (want \\n, \\t, \\r or \\\\)", s, next)
			}
			continue
		}
		switch next {
		case '%':
			lit = append(lit, '%')
		case 'k', 'v', 'h', 'p', 'o', 't', 'T':
			flush()
			parts = append(parts, formatPart{verb: next})
		default:
			return nil, fmt.Errorf("--format %q: unknown verb %%%c (want %%k, %%v, %%h, %%p, %%o, %%t, %%T or %%%%)", s, next)
		}
	}
	flush()
	return parts, nil
}

// appendRecord appends r as the format says to dst.
func appendRecord(dst []byte, format []formatPart, r *kgo.Record) []byte {
	for _, p := range format {
		switch p.verb {
		case 0:
			dst = append(dst, p.literal...)
		case 'k':
			dst = append(dst, r.Key...)
		case 'v':
			dst = append(dst, r.Value...)
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, h.Key...)
				dst = append(dst, '=')
				dst = append(dst, h.Value...)
			}
		case 'p':
			dst = strconv.AppendInt(dst, int64(r.Partition), 10)
		case 'o':
			dst = strconv.AppendInt(dst, r.Offset, 10)
		case 't':
			dst = strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
		case 'T':
			dst = append(dst, r.Topic...)
		}
	}
	return dst
}
