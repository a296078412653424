package api

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// Bytes are a call's argument or result: any bytes, kept byte for byte. In
// JSON they are a string when they are UTF-8 (nearly always, and as they
// were before), else {"base64": "..."}: a JSON string cannot carry other
// bytes (encoding/json turns each into U+FFFD).
type Bytes string

type base64Bytes struct {
	Base64 string `json:"base64"`
}

func (b Bytes) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(b)) {
		return json.Marshal(string(b))
	}
	return json.Marshal(base64Bytes{base64.StdEncoding.EncodeToString([]byte(b))})
}

func (b *Bytes) UnmarshalJSON(data []byte) error {
	switch {
	case len(data) > 0 && data[0] == '{':
		var v base64Bytes
		if err := json.Unmarshal(data, &v); err != nil {
			return err
		}
		raw, err := base64.StdEncoding.DecodeString(v.Base64)
		if err != nil {
			return errors.New("base64: " + err.Error())
		}
		*b = Bytes(raw)
	case string(data) == "null":
		*b = ""
	default:
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*b = Bytes(s)
	}
	return nil
}
