// Package forms is what the router and delivery both show of a clarification or an approval:
// the form stored with it, its card at a step, its text, and the partial answer kept between steps.
package forms

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/render"
)

// Of reads the form of a stored clarification. The lead stores {"form": runs.Form, …}; a
// bare runs.Form is accepted too. Identity and expiry come from the store's record, which is
// authoritative.
func Of(c threads.Clarification) runs.Form {
	var f runs.Form
	var wrapped struct {
		Form *runs.Form `json:"form"`
	}
	if json.Unmarshal(c.Form, &wrapped) == nil && wrapped.Form != nil {
		f = *wrapped.Form
	} else {
		_ = json.Unmarshal(c.Form, &f)
	}
	f.ID, f.AllowedUserID, f.ExpiresAt = c.ID, c.AllowedUserID, c.ExpiresAt
	return f
}

// Choices are the options a field is answered from (confirm: Yes, No).
func Choices(fld runs.FormField) []string {
	if fld.Kind == runs.FieldConfirm {
		return []string{"Yes", "No"}
	}
	return fld.Options
}

// Partial is what the user has answered so far of a form asked one field at a time.
type Partial struct {
	Fields map[int]FieldAnswer `json:"fields,omitempty"`
	// Selected are the ticked options of multi_choice fields not yet submitted.
	Selected map[int][]int `json:"selected,omitempty"`
}

type FieldAnswer struct {
	Options []int  `json:"options,omitempty"`
	Text    string `json:"text,omitempty"`
	Skipped bool   `json:"skipped,omitempty"`
}

func (p *Partial) Set(i int, a FieldAnswer) {
	if p.Fields == nil {
		p.Fields = map[int]FieldAnswer{}
	}
	p.Fields[i] = a
	delete(p.Selected, i)
}

func (p *Partial) Toggle(i, opt int) {
	if p.Selected == nil {
		p.Selected = map[int][]int{}
	}
	sel := p.Selected[i]
	for j, s := range sel {
		if s == opt {
			p.Selected[i] = append(sel[:j:j], sel[j+1:]...)
			return
		}
	}
	p.Selected[i] = append(sel, opt)
}

// next is the first field not answered yet, or -1 when every field is.
func (p *Partial) Next(f runs.Form) int {
	for i := range f.Fields {
		if _, ok := p.Fields[i]; !ok {
			return i
		}
	}
	return -1
}

// Compose writes the answer the lead reads: one "Label: value" line per answered field,
// then the free text if any ("People: 4").
func Compose(f runs.Form, p Partial, free string) string {
	var lines []string
	for i, fld := range f.Fields {
		a, ok := p.Fields[i]
		if !ok {
			continue
		}
		var v string
		switch {
		case a.Skipped:
			v = "(skipped)"
		case a.Text != "":
			v = a.Text
		default:
			opts := Choices(fld)
			var picked []string
			for _, o := range a.Options {
				if o >= 0 && o < len(opts) {
					picked = append(picked, opts[o])
				}
			}
			v = strings.Join(picked, ", ")
			if v == "" {
				v = "(none)"
			}
		}
		lines = append(lines, fld.Label+": "+v)
	}
	if free = strings.TrimSpace(free); free != "" {
		lines = append(lines, free)
	}
	return strings.Join(lines, "\n")
}

// Card is the card asking form f, at field step, with ticks for multi_choice fields in
// progress. A form the renderers cannot take (no fields, an id that is not a valid token) is
// shown as text: it is still answered by typing.
func Card(f runs.Form, body string, step int, p Partial, runID string) render.Card {
	c := render.Card{Title: "Question", Status: render.StatusWaiting, Body: body, Footer: render.Footer{RunID: runID}}
	if f.Approval != nil {
		c.Title = "Approval needed"
		c.Body = JoinParagraphs(body, ApprovalText(*f.Approval))
		body = c.Body
	}
	if len(f.Fields) > 0 {
		rf := &render.Form{Token: f.ID, Question: f.Question, AllowFreeText: f.AllowFreeText, Step: max(step, 0)}
		for i, fld := range f.Fields {
			rf.Fields = append(rf.Fields, render.FormField{ID: fld.ID, Label: fld.Label, Kind: render.FieldKind(fld.Kind),
				Options: fld.Options, Required: fld.Required, Selected: p.Selected[i]})
		}
		c.Form = rf
		if c.Validate() == nil {
			return c
		}
		c.Form = nil
	}
	c.Body = JoinParagraphs(body, Text(f, max(step, 0)))
	return c
}

// Text is a form's field step as markdown text with numbered options.
func Text(f runs.Form, step int) string {
	var b strings.Builder
	b.WriteString(f.Question)
	if step < len(f.Fields) {
		fld := f.Fields[step]
		b.WriteString("\n\n**" + fld.Label + "**")
		for j, o := range Choices(fld) {
			if fld.Kind != runs.FieldText {
				b.WriteString("\n" + strconv.Itoa(j+1) + ". " + o)
			}
		}
		if fld.Kind == runs.FieldText {
			b.WriteString("\n\n_Reply with your answer._")
		} else {
			b.WriteString("\n\n_Reply with the number of your choice._")
		}
		return b.String()
	}
	b.WriteString("\n\n_Reply with your answer._")
	return b.String()
}

func JoinParagraphs(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "\n\n")
}

// ApprovalText is what an approval card says of the call: the tool, its server, who asked,
// the arguments as the lead recorded them for people (secret-looking values masked), and who
// decides.
func ApprovalText(a runs.Approval) string {
	args := strings.ReplaceAll(a.Args, "```", "ʼʼʼ")
	who := "Only " + a.Requester + " can decide."
	if a.AdminOnly {
		who = "An admin decides."
	}
	return JoinParagraphs(
		"**Tool:** `"+a.Name+"` (server `"+a.Server+"`)\n**Asked by:** "+a.Requester,
		"**Arguments:**\n```json\n"+args+"\n```",
		"_"+who+"_")
}

// TextAll is every field of a form as text, for a form shown without buttons.
func TextAll(f runs.Form) string {
	parts := []string{f.Question}
	for i := range f.Fields {
		t := Text(runs.Form{Fields: f.Fields}, i)
		parts = append(parts, strings.TrimSpace(t))
	}
	return JoinParagraphs(parts...)
}
