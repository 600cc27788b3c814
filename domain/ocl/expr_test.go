package ocl

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseTemplate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want string // segments: literal text quoted with '', references as ${...}
		err  string
	}{
		{in: "plain", want: "'plain'"},
		{in: "", want: "''"},
		{in: "${var.port}", want: "${var.port}"},
		{in: "${  var.port\t}", want: "${var.port}"},
		{in: "a${service.id}b${service.tenant}", want: "'a'${service.id}'b'${service.tenant}"},
		{in: "${count.index}", want: "${count.index}"},
		{in: "${resource.db.outputs.host}", want: "${resource.db.outputs.host}"},
		{in: "${resource.web[12].outputs.ip-v4}", want: "${resource.web[12].outputs.ip-v4}"},
		{in: "${resource.web[ count.index ].outputs.ip}", want: "${resource.web[count.index].outputs.ip}"},
		{in: "$${var.port}", want: "'${var.port}'"},
		{in: "$$${var.port}", want: "'$${var.port}'"},
		{in: "$ {x} $x $", want: "'$ {x} $x $'"},
		{in: "}${var.a}}", want: "'}'${var.a}'}'"},
		{in: "${", err: "expression at character 1 is not closed"},
		{in: "ok ${var.a", err: "expression at character 4 is not closed"},
		{in: "${}", err: "it is empty"},
		{in: "${var.}", err: "a variable name is"},
		{in: "${var.a.b}", err: "a variable name is"},
		{in: "${service.name}", err: "expected var.NAME"},
		{in: "${resource.Web.outputs.x}", err: `"Web" is not a resource name`},
		{in: "${resource.web}", err: "expected resource.NAME.outputs.KEY"},
		{in: "${resource.web.ip}", err: "expected .outputs.KEY"},
		{in: "${resource.web[-1].outputs.ip}", err: "an index is a non-negative integer or count.index"},
		{in: "${resource.web[999].outputs.ip}", err: "index 999 is out of range"},
		{in: "${resource.web[1.outputs.ip}", err: `index is not closed with "]"`},
		{in: "${resource.web.outputs.}", err: "is not an output key"},
	}
	for _, tc := range cases {
		tpl, err := parseTemplate(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want ...%s...", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		var b strings.Builder
		for _, s := range tpl {
			if s.ref != nil {
				b.WriteString("${" + s.ref.String() + "}")
			} else {
				b.WriteString("'" + s.text + "'")
			}
		}
		if b.String() != tc.want {
			t.Errorf("%q = %s, want %s", tc.in, b.String(), tc.want)
		}
	}
}

func TestEscapeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "x", "${var.a}", "$${", "$$${", "a$", "$", "${", "}${}$", "$$$$${{{"} {
		tpl, err := parseTemplate(escapeText(s))
		if err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		if len(tpl.refs()) != 0 {
			t.Errorf("%q: escaped text still holds references", s)
		}
		var b strings.Builder
		for _, seg := range tpl {
			b.WriteString(seg.text)
		}
		if b.String() != s {
			t.Errorf("escape round trip of %q gave %q", s, b.String())
		}
	}
}

// The schema's count pattern and parseTemplate must agree, or a count could
// pass Validate and fail Plan.
func TestCountPatternMatchesParser(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"${var.n}", "${ var.n }", "${\tvar.n\n}", "${var.n} ", " ${var.n}", "${var.}", "${var.1n}",
		"${var._}", "${var." + strings.Repeat("a", 64) + "}", "${var." + strings.Repeat("a", 65) + "}",
		"${var.a}${var.b}", "$${var.n}", "${count.index}", "${var.a-b}",
	} {
		doc := head + "variables: {n: {type: integer, default: 1}}\nresources: [{name: a, plugin: noop, type: thing, count: " + strconvQuote(s) + "}]\n"
		d, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		schemaOK := !hasProblem(problemsOf(t, d.Validate(nil)), "resources[0].count", "must be an integer or a single")
		tpl, err := parseTemplate(s)
		r, single := tpl.single()
		parserOK := err == nil && single && r.kind == refVar
		if schemaOK != parserOK {
			t.Errorf("%q: schema accepts %v, parser accepts %v", s, schemaOK, parserOK)
		}
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
