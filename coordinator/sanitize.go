package coordinator

// User and client-id names in znode paths, as Kafka's Sanitizer writes
// them: URL-encoded (UTF-8, upper-case hex), with '*' and ' ' also
// encoded, so that a name holds no '/' and no character ZooKeeper or the
// entity path's separators could misread. Letters, digits, '.', '-' and
// '_' stay as they are. <default> is not sanitized (it is the default
// entity's name, never a user's).
//
// Entity paths name the client config entities as Kafka's change
// notifications do, with sanitized names: "users/<user>",
// "clients/<client-id>", "users/<user>/clients/<client-id>", any name
// possibly DefaultEntity.

import (
	"fmt"
	"strings"
)

// DefaultEntity names the default user or client-id entity.
const DefaultEntity = "<default>"

// UserEntity is the entity path of a user's configs (SCRAM credentials,
// quotas).
func UserEntity(user string) string { return "users/" + Sanitize(user) }

// ClientEntity is the entity path of a client id's quotas.
func ClientEntity(clientID string) string { return "clients/" + Sanitize(clientID) }

// UserClientEntity is the entity path of a user's quotas for one client id.
func UserClientEntity(user, clientID string) string {
	return UserEntity(user) + "/clients/" + Sanitize(clientID)
}

// EntityName is a parsed entity path: the user and the client id it
// names (desanitized), each with whether the path has it.
type EntityName struct {
	User, ClientID       string
	HasUser, HasClientID bool
}

// ParseEntityPath reads an entity path (see UserEntity).
func ParseEntityPath(path string) (EntityName, error) {
	parts := strings.Split(path, "/")
	var e EntityName
	var err error
	switch {
	case len(parts) == 2 && parts[0] == "users":
		e.HasUser = true
		e.User, err = Desanitize(parts[1])
	case len(parts) == 2 && parts[0] == "clients":
		e.HasClientID = true
		e.ClientID, err = Desanitize(parts[1])
	case len(parts) == 4 && parts[0] == "users" && parts[2] == "clients":
		e.HasUser, e.HasClientID = true, true
		if e.User, err = Desanitize(parts[1]); err == nil {
			e.ClientID, err = Desanitize(parts[3])
		}
	default:
		return e, fmt.Errorf("coordinator: entity path %q is not users/<user>, clients/<client-id> or users/<user>/clients/<client-id>", path)
	}
	if err == nil && (e.HasUser && e.User == "" || e.HasClientID && e.ClientID == "") {
		err = fmt.Errorf("coordinator: entity path %q names an empty entity", path)
	}
	return e, err
}

// Path is the entity path of e.
func (e EntityName) Path() string {
	switch {
	case e.HasUser && e.HasClientID:
		return UserClientEntity(e.User, e.ClientID)
	case e.HasUser:
		return UserEntity(e.User)
	}
	return ClientEntity(e.ClientID)
}

// Sanitize encodes a user or client-id name for a znode path.
func Sanitize(name string) string {
	if name == DefaultEntity {
		return name
	}
	var b strings.Builder
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-', c == '_':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// Desanitize decodes a name Sanitize wrote (and '+' as a space, as Java's
// URLDecoder reads what older writers left).
func Desanitize(s string) (string, error) {
	if !strings.ContainsAny(s, "%+") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			b.WriteByte(' ')
		case '%':
			if i+2 >= len(s) {
				return "", fmt.Errorf("coordinator: sanitized name %q: truncated escape at %d", s, i)
			}
			hi, lo := unhex(s[i+1]), unhex(s[i+2])
			if hi < 0 || lo < 0 {
				return "", fmt.Errorf("coordinator: sanitized name %q: bad escape at %d", s, i)
			}
			b.WriteByte(byte(hi<<4 | lo))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
