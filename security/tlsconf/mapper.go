package tlsconf

// ssl.principal.mapping.rules, as Kafka's SslPrincipalMapper reads and
// applies them.
//
// Grammar: a comma-separated list of rules, whitespace around each ignored,
// empty ones skipped:
//
//	DEFAULT                          the distinguished name unchanged
//	RULE:pattern/replacement/[L|U]   if pattern matches the whole name, the
//	                                 name with every match of pattern replaced
//	                                 by replacement, then lower- or upper-cased
//
// A backslash escapes the next character in pattern and replacement (so
// "\/" is a slash, kept escaped for the regular expression); commas inside
// them need no escape. Rules are tried in order; the first that matches
// gives the name; none matching is ErrNoMatchingRule (Kafka closes the
// connection). The default is "DEFAULT".
//
// The replacement is Java's: $n and ${name} refer to groups (a $n beyond the
// group count drops digits until it fits, and is literal if none does, as
// Kafka's escapeLiteralBackReferences makes it), \x is x. Patterns are
// Go's RE2, which is Java's syntax without lookaround, backreferences and
// possessive quantifiers; one difference in replacing: an empty match right
// after a match is not replaced again (Java would append the replacement
// once more for a pattern like ".*" written without anchors).

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Mapper maps distinguished names to principal names; its zero value is
// not usable: build one with NewMapper.
type Mapper struct {
	rules []rule
	text  string
}

type rule struct {
	isDefault bool
	pattern   string         // as written (escapes kept)
	replText  string         // as written
	whole     *regexp.Regexp // pattern anchored at both ends: the match test
	re        *regexp.Regexp // pattern as written: the replacement
	repl      []replPiece
	lower     bool
	upper     bool
}

// replPiece is literal text, or a group (by number, or by name).
type replPiece struct {
	lit   string
	group int // -1: literal
	name  string
}

// NewMapper parses rules (ssl.principal.mapping.rules; "" is DEFAULT).
func NewMapper(rules string) (*Mapper, error) {
	if strings.TrimSpace(rules) == "" {
		rules = "DEFAULT"
	}
	m := &Mapper{text: rules}
	s := strings.TrimSpace(rules)
	for len(s) > 0 {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		var r rule
		var err error
		var ok bool
		if rest, isRule := strings.CutPrefix(s, "RULE:"); isRule {
			var after string
			r, after, ok, err = parseRule(rest)
			if err != nil {
				return nil, err
			}
			if ok {
				s = after
			}
		}
		if !ok {
			// DEFAULT, an empty rule, or an invalid one: up to the next comma.
			text, rest, _ := strings.Cut(s, ",")
			text = strings.TrimSpace(text)
			switch text {
			case "":
				s = rest
				continue
			case "DEFAULT":
				r = rule{isDefault: true}
			default:
				return nil, fmt.Errorf("%w: ssl.principal.mapping.rules: invalid rule %q", ErrConfig, text)
			}
			s = rest
		}
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// parseRule reads pattern/replacement/[LU] from s (after "RULE:") and the
// separator after it. ok false is text that is not a well-formed RULE: (no
// second slash), which the caller reports as an invalid rule.
func parseRule(s string) (r rule, rest string, ok bool, err error) {
	pattern, s, found := cutUnescaped(s)
	if !found {
		return rule{}, "", false, nil
	}
	repl, s, found := cutUnescaped(s)
	if !found {
		return rule{}, "", false, nil
	}
	switch {
	case strings.HasPrefix(s, "L"):
		r.lower, s = true, s[1:]
	case strings.HasPrefix(s, "U"):
		r.upper, s = true, s[1:]
	}
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	if s != "" && s[0] != ',' {
		tail, _, _ := strings.Cut(s, ",")
		return rule{}, "", false, fmt.Errorf("%w: ssl.principal.mapping.rules: invalid rule RULE:%s/%s/: unmatched substring %q", ErrConfig, pattern, repl, strings.TrimSpace(tail))
	}
	s = strings.TrimPrefix(s, ",")
	r.pattern, r.replText = pattern, repl
	if r.whole, err = regexp.Compile(`\A(?:` + pattern + `)\z`); err == nil {
		r.re, err = regexp.Compile(pattern)
	}
	if err != nil {
		return rule{}, "", false, fmt.Errorf("%w: ssl.principal.mapping.rules: pattern %q: %v", ErrConfig, pattern, err)
	}
	if r.repl, err = parseReplacement(repl, r.re.NumSubexp()); err != nil {
		return rule{}, "", false, fmt.Errorf("%w: ssl.principal.mapping.rules: replacement %q: %v", ErrConfig, repl, err)
	}
	return r, s, true, nil
}

// cutUnescaped splits s at its first slash not escaped by a backslash.
func cutUnescaped(s string) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// parseReplacement reads Java's replacement syntax for a pattern of groups
// capturing groups.
func parseReplacement(s string, groups int) ([]replPiece, error) {
	var out []replPiece
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, replPiece{lit: lit.String(), group: -1})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
			if i == len(s) {
				return nil, fmt.Errorf("character to be escaped is missing")
			}
			lit.WriteByte(s[i])
		case c == '$' && i+1 < len(s) && s[i+1] == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("named capturing group is missing trailing '}'")
			}
			flush()
			out = append(out, replPiece{name: s[i+2 : i+end]})
			i += end
		case c == '$' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			// Java reads the first digit, then more while the number stays
			// a group; Kafka makes a first digit beyond the groups literal.
			n := int(s[i+1] - '0')
			if n > groups {
				if groups == 0 {
					return nil, fmt.Errorf("no group %d", n)
				}
				lit.WriteByte('$')
				continue
			}
			j := i + 2
			for j < len(s) && s[j] >= '0' && s[j] <= '9' && n*10+int(s[j]-'0') <= groups {
				n = n*10 + int(s[j]-'0')
				j++
			}
			flush()
			out = append(out, replPiece{group: n})
			i = j - 1
		case c == '$':
			return nil, fmt.Errorf("illegal group reference")
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return out, nil
}

// Name maps a distinguished name (SubjectName's form) to a principal name.
func (m *Mapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		if name, ok := r.apply(dn); ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w: %q (rules %q)", ErrNoMatchingRule, dn, m.text)
}

func (r rule) apply(dn string) (string, bool) {
	if r.isDefault {
		return dn, true
	}
	if !r.whole.MatchString(dn) {
		return "", false
	}
	var b strings.Builder
	last := 0
	for _, loc := range r.re.FindAllStringSubmatchIndex(dn, -1) {
		b.WriteString(dn[last:loc[0]])
		for _, p := range r.repl {
			switch {
			case p.group < 0:
				b.WriteString(p.lit)
			case p.name != "":
				if g := r.re.SubexpIndex(p.name); g >= 0 && loc[2*g] >= 0 {
					b.WriteString(dn[loc[2*g]:loc[2*g+1]])
				}
			case loc[2*p.group] >= 0:
				b.WriteString(dn[loc[2*p.group]:loc[2*p.group+1]])
			}
		}
		last = loc[1]
	}
	b.WriteString(dn[last:])
	out := b.String()
	switch {
	case r.lower:
		out = strings.ToLower(out)
	case r.upper:
		out = strings.ToUpper(out)
	}
	return out, true
}

// String writes the rules as Kafka's SslPrincipalMapper.toString does,
// "[RULE:pattern/replacement/L, DEFAULT]", for logs and tests.
func (m *Mapper) String() string {
	parts := make([]string, len(m.rules))
	for i, r := range m.rules {
		parts[i] = r.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (r rule) String() string {
	if r.isDefault {
		return "DEFAULT"
	}
	s := "RULE:" + r.pattern + "/" + r.replText
	switch {
	case r.lower:
		s += "/L"
	case r.upper:
		s += "/U"
	}
	return s
}
