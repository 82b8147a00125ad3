package scram

// The SCRAM messages' grammar (RFC 5802 section 7), parsed strictly: every
// deviation is ErrMalformed (or ErrUnsupported for what is well formed but
// not served), never a panic.

import (
	"fmt"
	"strconv"
	"strings"
)

// attr splits "k=value" where k is one letter; want, if not zero, is the
// letter required.
func attr(field string, want byte) (byte, string, error) {
	if len(field) < 2 || field[1] != '=' || !isAlpha(field[0]) {
		return 0, "", fmt.Errorf("%w: attribute %q", ErrMalformed, field)
	}
	if want != 0 && field[0] != want {
		return 0, "", fmt.Errorf("%w: want attribute %c, got %q", ErrMalformed, want, field)
	}
	return field[0], field[2:], nil
}

func isAlpha(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// checkNonce: printable ASCII without ',' and not empty.
func checkNonce(n string) error {
	if n == "" {
		return fmt.Errorf("%w: empty nonce", ErrMalformed)
	}
	for i := 0; i < len(n); i++ {
		if n[i] < 0x21 || n[i] > 0x7e || n[i] == ',' {
			return fmt.Errorf("%w: nonce byte %#x at %d", ErrMalformed, n[i], i)
		}
	}
	return nil
}

// decodeName undoes saslname's escapes ("=2C" is ',', "=3D" is '='); any
// other '=' is malformed, as are NUL and an empty name.
func decodeName(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: empty name", ErrMalformed)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", fmt.Errorf("%w: NUL in name", ErrMalformed)
	}
	if strings.IndexByte(s, '=') < 0 {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("%w: bad escape at %d in name", ErrMalformed, i)
		}
		i += 2
	}
	return b.String(), nil
}

// encodeName escapes a name as saslname.
func encodeName(s string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}

// clientFirst is a parsed client-first message.
type clientFirst struct {
	gs2        string // the gs2 header with its trailing ','
	authzid    string
	user       string
	nonce      string
	bare       string
	extensions map[string]string
}

func parseClientFirst(msg string) (clientFirst, error) {
	var cf clientFirst
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return cf, fmt.Errorf("%w: client-first has no gs2 header", ErrMalformed)
	}
	switch {
	case flag == "n" || flag == "y":
	case strings.HasPrefix(flag, "p="):
		return cf, fmt.Errorf("%w: channel binding", ErrUnsupported)
	default:
		return cf, fmt.Errorf("%w: gs2 flag %q", ErrMalformed, flag)
	}
	az, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return cf, fmt.Errorf("%w: client-first gs2 header unterminated", ErrMalformed)
	}
	if az != "" {
		if !strings.HasPrefix(az, "a=") {
			return cf, fmt.Errorf("%w: gs2 authzid %q", ErrMalformed, az)
		}
		name, err := decodeName(az[2:])
		if err != nil {
			return cf, err
		}
		cf.authzid = name
	}
	cf.gs2 = msg[:len(msg)-len(bare)]
	cf.bare = bare
	fields := strings.Split(bare, ",")
	if len(fields) < 2 {
		return cf, fmt.Errorf("%w: client-first wants n= and r=", ErrMalformed)
	}
	if strings.HasPrefix(fields[0], "m=") {
		return cf, fmt.Errorf("%w: mandatory extension", ErrUnsupported)
	}
	_, n, err := attr(fields[0], 'n')
	if err != nil {
		return cf, err
	}
	if cf.user, err = decodeName(n); err != nil {
		return cf, err
	}
	_, r, err := attr(fields[1], 'r')
	if err != nil {
		return cf, err
	}
	if err := checkNonce(r); err != nil {
		return cf, err
	}
	cf.nonce = r
	if cf.extensions, err = parseExtensions(fields[2:]); err != nil {
		return cf, err
	}
	return cf, nil
}

// parseExtensions reads Kafka's SCRAM extensions, key=value with an
// alphabetic key (Kafka's ScramExtensions), each key once.
func parseExtensions(fields []string) (map[string]string, error) {
	if len(fields) == 0 {
		return nil, nil
	}
	ext := make(map[string]string, len(fields))
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: extension %q", ErrMalformed, f)
		}
		for i := 0; i < len(k); i++ {
			if !isAlpha(k[i]) {
				return nil, fmt.Errorf("%w: extension name %q", ErrMalformed, k)
			}
		}
		if _, dup := ext[k]; dup {
			return nil, fmt.Errorf("%w: extension %q twice", ErrMalformed, k)
		}
		ext[k] = v
	}
	return ext, nil
}

// clientFinal is a parsed client-final message.
type clientFinal struct {
	channel      []byte // decoded c=
	nonce        string
	withoutProof string
	proof        []byte
}

func parseClientFinal(msg string) (clientFinal, error) {
	var cl clientFinal
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return cl, fmt.Errorf("%w: client-final has no proof", ErrMalformed)
	}
	cl.withoutProof = msg[:i]
	var err error
	if cl.proof, err = b64.Strict().DecodeString(msg[i+3:]); err != nil {
		return cl, fmt.Errorf("%w: proof: %v", ErrMalformed, err)
	}
	fields := strings.Split(cl.withoutProof, ",")
	if len(fields) < 2 {
		return cl, fmt.Errorf("%w: client-final wants c= and r=", ErrMalformed)
	}
	_, c, err := attr(fields[0], 'c')
	if err != nil {
		return cl, err
	}
	if cl.channel, err = b64.Strict().DecodeString(c); err != nil {
		return cl, fmt.Errorf("%w: channel binding: %v", ErrMalformed, err)
	}
	_, r, err := attr(fields[1], 'r')
	if err != nil {
		return cl, err
	}
	if err := checkNonce(r); err != nil {
		return cl, err
	}
	cl.nonce = r
	if _, err := parseExtensions(fields[2:]); err != nil {
		return cl, err
	}
	return cl, nil
}

// serverFirst is a parsed server-first message (client side).
type serverFirst struct {
	nonce      string
	salt       []byte
	iterations int
}

func parseServerFirst(msg string) (serverFirst, error) {
	var sf serverFirst
	fields := strings.Split(msg, ",")
	if len(fields) > 0 && strings.HasPrefix(fields[0], "e=") {
		return sf, fmt.Errorf("%w: server error %q", ErrAuthFailed, fields[0][2:])
	}
	if len(fields) < 3 {
		return sf, fmt.Errorf("%w: server-first wants r=, s= and i=", ErrMalformed)
	}
	if strings.HasPrefix(fields[0], "m=") {
		return sf, fmt.Errorf("%w: mandatory extension", ErrUnsupported)
	}
	_, r, err := attr(fields[0], 'r')
	if err != nil {
		return sf, err
	}
	if err := checkNonce(r); err != nil {
		return sf, err
	}
	sf.nonce = r
	_, s, err := attr(fields[1], 's')
	if err != nil {
		return sf, err
	}
	if sf.salt, err = b64.Strict().DecodeString(s); err != nil || len(sf.salt) == 0 {
		return sf, fmt.Errorf("%w: salt %q", ErrMalformed, s)
	}
	_, it, err := attr(fields[2], 'i')
	if err != nil {
		return sf, err
	}
	if sf.iterations, err = strconv.Atoi(it); err != nil {
		return sf, fmt.Errorf("%w: iterations %q", ErrMalformed, it)
	}
	return sf, nil
}

// parseServerFinal returns the decoded v= signature, or the e= error as
// ErrAuthFailed.
func parseServerFinal(msg string) ([]byte, error) {
	field, _, _ := strings.Cut(msg, ",")
	k, v, err := attr(field, 0)
	if err != nil {
		return nil, err
	}
	switch k {
	case 'e':
		return nil, fmt.Errorf("%w: server error %q", ErrAuthFailed, v)
	case 'v':
		sig, err := b64.Strict().DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("%w: server signature: %v", ErrMalformed, err)
		}
		return sig, nil
	}
	return nil, fmt.Errorf("%w: server-final attribute %q", ErrMalformed, field)
}
