package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"
)

// Every error the package's tests get answered is recorded here with its
// operation (RecordAnswers, which their systems wrap the API with:
// forEach and newSystem in errdocs_test.go), and checked against the
// operation's documented responses.
var answers = struct {
	sync.Mutex
	seen         map[string]int // "operationId status error_code"
	undocumented map[string]string
}{seen: map[string]int{}, undocumented: map[string]string{}}

// Answer is one error answered by an operation.
type Answer struct {
	Operation string
	Status    int
	Code      string // "" when the body has no error_code (or is not JSON)
}

func (a Answer) String() string { return fmt.Sprintf("%s %d %s", a.Operation, a.Status, a.Code) }

// UndocumentedAnswers are the errors answered that their operation's
// document does not list, each with why.
func UndocumentedAnswers() []string {
	answers.Lock()
	defer answers.Unlock()
	var out []string
	for a, why := range answers.undocumented {
		out = append(out, a+": "+why)
	}
	slices.Sort(out)
	return out
}

// AnsweredErrors are the errors answered, with how often.
func AnsweredErrors() map[string]int {
	answers.Lock()
	defer answers.Unlock()
	out := make(map[string]int, len(answers.seen))
	for k, v := range answers.seen {
		out[k] = v
	}
	return out
}

type answerWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *answerWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *answerWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status >= 400 && w.body.Len() < 1<<16 {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// RecordAnswers wraps next (Deps.Wrap) to record every error it answers.
func RecordAnswers(s *Server, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		aw := &answerWriter{ResponseWriter: w}
		next.ServeHTTP(aw, r)
		if aw.status < 400 || aw.status == 499 {
			return
		}
		o := s.operationOf(r)
		if o == nil {
			return // the router's own 404 or 405: no operation
		}
		var body struct {
			Code string `json:"error_code"`
		}
		mediaType, _, _ := strings.Cut(aw.Header().Get("Content-Type"), ";")
		if mediaType == "application/json" {
			_ = json.Unmarshal(aw.body.Bytes(), &body)
		}
		a := Answer{o.OperationID, aw.status, body.Code}
		why := documented(o, a, mediaType)
		if why == "" && a.Status == http.StatusTooManyRequests && aw.Header().Get("Retry-After") == "" {
			why = "answered without Retry-After"
		}
		answers.Lock()
		defer answers.Unlock()
		answers.seen[a.String()]++
		if why != "" {
			answers.undocumented[a.String()] = why + " (" + r.Method + " " + r.URL.Path + ")"
		}
	})
}

// operationOf is the operation that r reached, found as the router found it.
func (s *Server) operationOf(r *http.Request) *huma.Operation {
	_, pattern := s.router.muxFor(r.URL.Path).Handler(r)
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		return nil
	}
	path = strings.ReplaceAll(path, "{$}", "")
	if method == http.MethodHead {
		method = http.MethodGet
	}
	return s.operation(method, path)
}

// documented says why a is not in o's responses ("" when it is).
func documented(o *huma.Operation, a Answer, mediaType string) string {
	resp := o.Responses[strconv.Itoa(a.Status)]
	if resp == nil {
		return "status not documented"
	}
	if mediaType != "application/json" {
		if resp.Content[mediaType] == nil {
			return "answered as " + mediaType + ", which is not documented"
		}
		return ""
	}
	var schema *huma.Schema
	if mt := resp.Content["application/json"]; mt != nil {
		schema = mt.Schema
	}
	codes, required := documentedCodes(schema)
	switch {
	case a.Code == "" && required:
		return "answered without an error_code, which the document requires"
	case a.Code != "" && !slices.Contains(codes, a.Code):
		return "error_code not in the documented enum " + fmt.Sprint(codes)
	}
	return ""
}

// documentedCodes reads the error_code enum of a response schema (errdocs.go's shape).
func documentedCodes(schema *huma.Schema) (codes []string, required bool) {
	if schema == nil {
		return nil, false
	}
	for _, alt := range schema.OneOf {
		c, _ := documentedCodes(alt)
		codes = append(codes, c...)
	}
	for _, part := range schema.AllOf {
		if p := part.Properties["error_code"]; p != nil {
			for _, v := range p.Enum {
				codes = append(codes, fmt.Sprint(v))
			}
			required = required || slices.Contains(part.Required, "error_code")
		}
	}
	return codes, required
}

// DumpAnswers writes the answered errors to the file GATEHOUSE_ERRDOCS_DUMP
// names, if any: a list to compare with a new operation's declarations.
func DumpAnswers() {
	name := os.Getenv("GATEHOUSE_ERRDOCS_DUMP")
	if name == "" {
		return
	}
	var lines []string
	for a, n := range AnsweredErrors() {
		lines = append(lines, fmt.Sprintf("%s %d", a, n))
	}
	slices.Sort(lines)
	_ = os.WriteFile(name, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}
