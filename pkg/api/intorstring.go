package api

import (
	"encoding/json"
	"strconv"
)

// IntOrString is a port given by number or by name, as Kubernetes'
// intstr.IntOrString: JSON takes both 8080 and "http", and a number is
// written back as a number (kubectl compares what it applied with it).
type IntOrString string

func (p IntOrString) MarshalJSON() ([]byte, error) {
	if n, err := strconv.Atoi(string(p)); err == nil {
		return []byte(strconv.Itoa(n)), nil
	}
	return json.Marshal(string(p))
}

func (p *IntOrString) UnmarshalJSON(data []byte) error {
	var n json.Number
	if err := json.Unmarshal(data, &n); err == nil {
		*p = IntOrString(n.String())
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	*p = IntOrString(s)
	return nil
}
