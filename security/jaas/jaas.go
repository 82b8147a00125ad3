// Package jaas parses the JAAS configuration value of Kafka's
// sasl.jaas.config keys, as Kafka's JaasConfig reads it:
//
//	config = entry { entry }
//	entry  = loginModuleClass flag { option } ";"
//	flag   = "required" | "requisite" | "sufficient" | "optional"
//	option = name "=" value
//	value  = quoted | token
//
// A quoted value is in double quotes with backslash escaping the next
// character; a token runs to whitespace, '=' or ';'. Comments
// ("//" to end of line, "/* ... */") are skipped, as Java's
// StreamTokenizer does for Kafka.
package jaas

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax marks a value that is not a JAAS configuration.
var ErrSyntax = errors.New("jaas: syntax error")

// The login modules sluice understands.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// Entry is one login module and its options.
type Entry struct {
	Module  string
	Flag    string
	Options map[string]string
}

// Parse reads a JAAS configuration value.
func Parse(s string) ([]Entry, error) {
	p := parser{s: s}
	var out []Entry
	for {
		tok, err := p.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tEOF {
			break
		}
		if tok.kind != tWord {
			return nil, p.errorf("want a login module class, got %q", tok.text)
		}
		e := Entry{Module: tok.text, Options: map[string]string{}}
		flag, err := p.next()
		if err != nil {
			return nil, err
		}
		switch f := strings.ToLower(flag.text); {
		case flag.kind == tWord && (f == "required" || f == "requisite" || f == "sufficient" || f == "optional"):
			e.Flag = f
		default:
			return nil, p.errorf("login module %s: want a control flag, got %q", e.Module, flag.text)
		}
		for {
			name, err := p.next()
			if err != nil {
				return nil, err
			}
			if name.kind == tSemi {
				break
			}
			if name.kind != tWord {
				return nil, p.errorf("login module %s: want an option or ';', got %q", e.Module, name.text)
			}
			if eq, err := p.next(); err != nil {
				return nil, err
			} else if eq.kind != tEq {
				return nil, p.errorf("option %s: want '='", name.text)
			}
			val, err := p.next()
			if err != nil {
				return nil, err
			}
			if val.kind != tWord && val.kind != tQuoted {
				return nil, p.errorf("option %s: want a value", name.text)
			}
			e.Options[name.text] = val.text
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no login module", ErrSyntax)
	}
	return out, nil
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tWord
	tQuoted
	tEq
	tSemi
)

type token struct {
	kind tokKind
	text string
}

type parser struct {
	s   string
	pos int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at position %d: %s", ErrSyntax, p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) next() (token, error) {
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case strings.HasPrefix(p.s[p.pos:], "//"):
			if i := strings.IndexByte(p.s[p.pos:], '\n'); i >= 0 {
				p.pos += i + 1
			} else {
				p.pos = len(p.s)
			}
		case strings.HasPrefix(p.s[p.pos:], "/*"):
			i := strings.Index(p.s[p.pos+2:], "*/")
			if i < 0 {
				return token{}, p.errorf("unterminated comment")
			}
			p.pos += i + 4
		case c == '=':
			p.pos++
			return token{tEq, "="}, nil
		case c == ';':
			p.pos++
			return token{tSemi, ";"}, nil
		case c == '"':
			var b strings.Builder
			for p.pos++; p.pos < len(p.s); p.pos++ {
				switch p.s[p.pos] {
				case '\\':
					p.pos++
					if p.pos < len(p.s) {
						b.WriteByte(p.s[p.pos])
					}
				case '"':
					p.pos++
					return token{tQuoted, b.String()}, nil
				default:
					b.WriteByte(p.s[p.pos])
				}
			}
			return token{}, p.errorf("unterminated quoted value")
		default:
			start := p.pos
			for p.pos < len(p.s) && !strings.ContainsRune(" \t\r\n=;\"", rune(p.s[p.pos])) {
				p.pos++
			}
			return token{tWord, p.s[start:p.pos]}, nil
		}
	}
	return token{kind: tEOF}, nil
}

// Users returns a PlainLoginModule's user_<name>="password" entries.
func (e Entry) Users() map[string]string {
	users := map[string]string{}
	for k, v := range e.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
			users[name] = v
		}
	}
	return users
}
