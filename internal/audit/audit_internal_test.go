package audit

import "testing"

// TestChanged: of two sides only the differing fields are kept, a field
// present on one side only is null on the other, and equal sides are no
// change.
func TestChanged(t *testing.T) {
	for _, tt := range []struct {
		before, after, wantB, wantA string
	}{
		{`{"a":1,"b":"x","c":[1]}`, `{"a":1,"b":"y","c":[1]}`, `{"b":"x"}`, `{"b":"y"}`},
		{`{"a":1}`, `{"a":1,"n":true}`, `{"n":null}`, `{"n":true}`},
		{`{"a":1,"gone":"x"}`, `{"a":1}`, `{"gone":"x"}`, `{"gone":null}`},
		{`{"a":{"x":1}}`, `{"a":{"x":1}}`, ``, ``},
	} {
		b, a, err := changed([]byte(tt.before), []byte(tt.after))
		if err != nil || string(b) != tt.wantB || string(a) != tt.wantA {
			t.Errorf("changed(%s, %s) = %s, %s, %v; want %s, %s", tt.before, tt.after, b, a, err, tt.wantB, tt.wantA)
		}
	}
	if _, _, err := changed([]byte(`[1]`), []byte(`{}`)); err == nil {
		t.Error("a side that is no object: no error")
	}
}
