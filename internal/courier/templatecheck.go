package courier

import (
	"fmt"
	"sort"
	"strings"
	"text/template/parse"
)

// checkTemplate parses src and refuses what a message template may not do:
// use a variable its message does not document, or define or call other
// templates. Errors name the field and the variable.
func checkTemplate(field, src string, allowed map[string]bool) error {
	trees, err := parse.Parse(field, src, "", "", builtinFuncs())
	if err != nil {
		return &TemplateError{Field: field, Reason: "does not parse: " + parseReason(err)}
	}
	if len(trees) > 1 {
		return &TemplateError{Field: field, Reason: "may not define templates ({{define}} or {{block}})"}
	}
	tree := trees[field]
	if tree == nil || tree.Root == nil {
		return nil
	}
	c := checker{allowed: allowed}
	c.node(tree.Root)
	if c.err != "" {
		return &TemplateError{Field: field, Reason: c.err}
	}
	return nil
}

type checker struct {
	allowed map[string]bool
	err     string
}

func (c *checker) field(name string) {
	if c.err != "" || c.allowed[name] {
		return
	}
	names := make([]string, 0, len(c.allowed))
	for n := range c.allowed {
		names = append(names, "."+n)
	}
	sort.Strings(names)
	c.err = fmt.Sprintf("uses .%s, which this message does not have; it may use %s", name, strings.Join(names, ", "))
}

func (c *checker) node(n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, m := range n.Nodes {
			c.node(m)
		}
	case *parse.ActionNode:
		c.pipe(n.Pipe)
	case *parse.IfNode:
		c.branch(&n.BranchNode)
	case *parse.RangeNode:
		// Every variable is one string, so no message needs a loop, and a
		// loop over a number ({{range 1000000}}) would multiply the output.
		if c.err == "" {
			c.err = "may not loop ({{range}}): every variable is a single value"
		}
	case *parse.WithNode:
		c.branch(&n.BranchNode)
	case *parse.TemplateNode:
		if c.err == "" {
			c.err = "may not call other templates ({{template}})"
		}
	}
}

func (c *checker) branch(b *parse.BranchNode) {
	c.pipe(b.Pipe)
	c.node(b.List)
	if b.ElseList != nil {
		c.node(b.ElseList)
	}
}

func (c *checker) pipe(p *parse.PipeNode) {
	if p == nil {
		return
	}
	for _, cmd := range p.Cmds {
		for _, arg := range cmd.Args {
			c.arg(arg)
		}
	}
}

// padding names the functions that can make output of any length from
// nothing ({{printf "%0999999d" 0}}) or call out; templates do not need them.
var padding = map[string]bool{"printf": true, "print": true, "println": true, "call": true}

func (c *checker) arg(n parse.Node) {
	switch n := n.(type) {
	case *parse.IdentifierNode:
		if padding[n.Ident] && c.err == "" {
			c.err = "may not use " + n.Ident + ": write the text out and use the variables as they are"
		}
	case *parse.FieldNode:
		c.field(n.Ident[0])
	case *parse.VariableNode:
		if n.Ident[0] == "$" && len(n.Ident) > 1 {
			c.field(n.Ident[1])
		}
	case *parse.ChainNode:
		c.arg(n.Node)
	case *parse.PipeNode:
		c.pipe(n)
	}
}

// builtinFuncs names text/template's predefined functions for the parser,
// which only needs to know they exist.
func builtinFuncs() map[string]any {
	m := map[string]any{}
	for _, n := range []string{"and", "call", "html", "index", "slice", "js", "len", "not", "or", "print", "printf",
		"println", "urlquery", "eq", "ge", "gt", "le", "lt", "ne"} {
		m[n] = fmt.Sprint
	}
	return m
}
