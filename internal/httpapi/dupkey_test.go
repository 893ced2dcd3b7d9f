package httpapi

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// dupKeySeeds are bodies around what scanBodyKeys answers itself and what
// it leaves to the decoder.
var dupKeySeeds = []string{
	`{}`, `[]`, `{"a":1,"a":2}`, `{"a":1,"A":2}`, `{"identifier":"a@example.com"}`, `{"a":{"b":1},"b":{"a":1}}`,
	`{"a":{"b":1,"B":2}}`, `[{"a":1},{"a":1}]`, `{"a":[{"x":1,"X":[]}]}`, `{"k":1,"\u212a":2}`, `{"s":1,"ſ":2}`,
	`{"K":1,"K":2}`, `{"a\u0041":1,"aa":2}`, `{"é":1,"É":2}`, `{"a":"x\"y","A":1}`, `{"a":"\u00e9","a":1}`,
	`{"a":1,}`, `{"a":1,"a"`, `{"a":1 "a":2}`, `{"a":1-2,"a":3}`, `{"a":01,"a":2}`, `{"a":1.,"a":2}`,
	`{"a":1e,"a":2}`, `{"a":-,"a":2}`, `{"a":tru,"a":2}`, `{"a":"\x","a":2}`, `{"a":"\u12","a":2}`,
	"{\"a\":\"\x01\",\"a\":2}", "{\"a\":\"\xff\",\"A\":2}", "{\"\xff\":1,\"\xfe\":2}", `{"a":1} {"a":1,"a":2}`,
	`{"a":1}x`, ` { "a" : 1 , "A" : 2 } `, `"a"`, `1`, `-0.5e+10`, `nul`, ``, `[`, `{`, `{"a"}`, `{"a":}`,
	`[1 2]`, `[1,]`, `[,1]`, `{,"a":1}`, `{"a":[1,2,{"b":null,"B":true}]}`,
	`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,` +
		`"q":17,"r":18,"s":19,"t":20,"u":21,"v":22,"w":23,"x":24,"y":25,"z":26,"aa":27,"ab":28,"ac":29,"ad":30,"ae":31,"af":32,"A":33}`,
	strings.Repeat(`[`, 20) + `{"a":1,"a":2}` + strings.Repeat(`]`, 20),
	strings.Repeat(`{"x":`, 15) + `{"a":1,"a":2}` + strings.Repeat(`}`, 15),
}

// FuzzDuplicateKey holds duplicateKey, whose scan answers most bodies
// itself, to the token-by-token decoding on any text; and the scan to
// answering (ok) the plain bodies clients send.
func FuzzDuplicateKey(f *testing.F) {
	for _, s := range dupKeySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := duplicateKeyDecoded(data)
		if got := duplicateKey(data); got != want {
			_, ok := scanBodyKeys(data)
			t.Fatalf("duplicateKey(%q) = %v (scan answered: %v); decoded token by token: %v", data, got, ok, want)
		}
	})
}

// TestDuplicateKeyScan runs the comparison of FuzzDuplicateKey over many
// generated bodies (valid ones with repeated and case-variant keys, and the
// same with one byte changed), and checks that the scan itself answers the
// bodies the sign-in routes receive.
func TestDuplicateKeyScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := []string{"a", "A", "b", "id", "ID", "Id", "identifier", "user_meta", "k", "s", "x_1"}
	var value func(depth int) string
	value = func(depth int) string {
		switch n := r.IntN(10); {
		case n < 2 && depth < 4:
			var b strings.Builder
			b.WriteString("{")
			for j := range r.IntN(5) {
				if j > 0 {
					b.WriteString(",")
				}
				b.WriteString(strings.Repeat(" ", r.IntN(2)) + `"` + keys[r.IntN(len(keys))] + `":` + value(depth+1))
			}
			return b.String() + "}"
		case n < 3 && depth < 4:
			parts := make([]string, r.IntN(4))
			for j := range parts {
				parts[j] = value(depth + 1)
			}
			return "[" + strings.Join(parts, ", ") + "]"
		case n < 5:
			return []string{`"x"`, `"é"`, `"a\"b"`, `"\u0041"`, `""`, `"\n"`}[r.IntN(6)]
		case n < 8:
			return []string{`0`, `-1`, `12.5`, `1e9`, `-0.0E-3`}[r.IntN(5)]
		}
		return []string{`true`, `false`, `null`}[r.IntN(3)]
	}
	answered, total := 0, 0
	for range 20000 {
		body := []byte(value(0))
		if r.IntN(2) == 0 && len(body) > 0 {
			// One byte changed, removed or added: mostly text that is not JSON.
			j := r.IntN(len(body))
			switch r.IntN(3) {
			case 0:
				body[j] = `{}[],:"\ -1eE.tn`[r.IntN(16)]
			case 1:
				body = append(body[:j], body[j+1:]...)
			default:
				body = append(body[:j], append([]byte{`{}[],:"\ -1eE.tn`[r.IntN(16)]}, body[j:]...)...)
			}
		}
		want := duplicateKeyDecoded(body)
		got, ok := scanBodyKeys(body)
		if ok {
			answered++
			if got != want {
				t.Fatalf("scanBodyKeys(%q) = %v; decoded token by token: %v", body, got, want)
			}
		}
		if duplicateKey(body) != want {
			t.Fatalf("duplicateKey(%q) != %v", body, want)
		}
		total++
	}
	t.Logf("the scan answered %d of %d generated bodies", answered, total)
	if answered < total/3 {
		t.Errorf("the scan answered only %d of %d generated bodies", answered, total)
	}
	for _, body := range []string{
		`{"identifier":"someone@example.com","user_meta":{"first_name":"Zoë","age":42}}`,
		`{"identifier":"+15550001234"}`, `{"user_id":"0190f1a2-0000-7000-8000-000000000000","otp":"123456"}`,
	} {
		if _, ok := scanBodyKeys([]byte(body)); !ok {
			t.Errorf("scanBodyKeys(%s) left it to the decoder; want it answered", body)
		}
	}
}
