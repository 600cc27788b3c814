package client

import (
	"encoding/json"
	"fmt"
	"strings"
)

// VariableValue turns a template variable's value written as text (on a
// command line, in a Terraform map) into JSON of the variable's type, as
// the API names types (STRING, INTEGER, NUMBER, BOOLEAN, OBJECT, ARRAY).
// A string variable, or one whose type is not known (typ ""; the server
// then names the variables the template declares), takes the text as it
// is; any other takes it as JSON.
func VariableValue(typ, text string) (json.RawMessage, error) {
	if typ == "" || typ == "STRING" {
		return json.Marshal(text)
	}
	if json.Valid([]byte(text)) {
		return json.RawMessage(text), nil
	}
	return nil, fmt.Errorf("the variable is %s and %q is not one (write JSON for objects and arrays)", article(strings.ToLower(typ)), text)
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

// VariableText is the inverse of VariableValue: a string's text, or any
// other value's JSON.
func VariableText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}
