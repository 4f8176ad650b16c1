package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/internal/forms"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/render"
)

// interaction handles a click, a selection or a submitted form, and answers the interaction
// exactly once: privately with a notice when there is something to say, empty otherwise.
func (ans answers) interaction(ctx context.Context, ch channels.Channel, in channels.Inbound, admin bool) error {
	notice, err := ans.interact(ctx, ch, in, admin)
	if err != nil {
		notice = msgFailed
	}
	if !ans.r.respond(ctx, ch, in.Interaction, notice) && notice != "" {
		ans.r.reply(ctx, ch, in, notice)
	}
	return err
}

func (ans answers) interact(ctx context.Context, ch channels.Channel, in channels.Inbound, admin bool) (string, error) {
	platform, user := in.Conv.Platform, in.Identity.ChannelUserID
	id, err := render.DecodeAction(ans.r.opt.ActionKey, in.Interaction.Data)
	if err != nil {
		ans.r.m.Refused(platform, "forged_action")
		ans.r.log.Warn("channels: refusing an interactive id that does not verify", "platform", platform, "user", user, "err", err)
		return msgBadButton, nil
	}
	if id.Kind == render.ActionButton {
		ans.r.refuse(platform, "stale_button", "ignoring a card button with no action", in)
		return msgStaleButton, nil
	}
	c, err := ans.r.opt.Clarifications.Get(ctx, id.Token)
	switch {
	case errors.Is(err, threads.ErrClarificationNotFound), errors.Is(err, threads.ErrClarificationCancelled):
		ans.r.refuse(platform, "expired", "refusing a click on a question that is no longer open", in)
		return msgNotOpen, nil
	case err != nil:
		return "", fmt.Errorf("channels: reading question %s: %w", id.Token, err)
	}
	form := forms.Of(c)
	if form.Approval != nil {
		return ans.r.apv.approvalClick(ctx, ch, in, c, form, id, admin)
	}
	if notice := ans.checkAnswerable(in, c); notice != "" {
		return notice, nil
	}
	return ans.click(ctx, ch, in, c, form, id, admin)
}

// click takes a click (or a modal's submission) on an open question's form: an option chosen,
// ticked or skipped, a text given, the form opened or submitted. It returns the notice for the
// clicker, if any.
func (ans answers) click(ctx context.Context, ch channels.Channel, in channels.Inbound, c threads.Clarification, form runs.Form, id render.ActionID, admin bool) (string, error) {
	p, err := ans.loadPartial(ctx, c.ID)
	if err != nil {
		return "", err
	}
	field := id.Field
	var fld runs.FormField
	if len(form.Fields) > 0 {
		if field < 0 || field >= len(form.Fields) {
			return msgBadButton, nil
		}
		fld = form.Fields[field]
	}
	inRange := func(o int) bool { return o >= 0 && o < len(forms.Choices(fld)) }

	switch id.Kind {
	case render.ActionOpenForm:
		return ans.openForm(ctx, ch, in, form, p, c.RunID), nil
	case render.ActionFreeText:
		if text := firstValue(in.Interaction.Values); text != "" {
			return ans.finishAnswer(ctx, ch, in, c, form, p, text, admin)
		}
		return msgTypeAnswer, nil
	case render.ActionChoose:
		if len(form.Fields) == 0 || !inRange(id.Option) {
			return msgBadButton, nil
		}
		p.Set(field, forms.FieldAnswer{Options: []int{id.Option}})
	case render.ActionSelect:
		opts := ans.chosenOptions(in.Interaction.Values, id.Token, field)
		if len(form.Fields) == 0 || len(opts) == 0 {
			return msgBadButton, nil
		}
		p.Set(field, forms.FieldAnswer{Options: opts})
	case render.ActionToggle:
		if len(form.Fields) == 0 || !inRange(id.Option) {
			return msgBadButton, nil
		}
		p.Toggle(field, id.Option)
		if err := ans.savePartial(ctx, c, p); err != nil {
			return "", err
		}
		ans.showForm(ctx, ch, in, forms.Card(form, "", field, p, c.RunID))
		return "", nil
	case render.ActionSubmit:
		if len(in.Interaction.Values) > 0 {
			free := ans.modalAnswers(in.Interaction.Values, form, id.Token, &p)
			return ans.finishAnswer(ctx, ch, in, c, form, p, free, admin)
		}
		if len(form.Fields) == 0 {
			return msgTypeAnswer, nil
		}
		sel := append([]int(nil), p.Selected[field]...)
		if len(sel) == 0 && fld.Required {
			return "Pick at least one option, then press Done.", nil
		}
		sort.Ints(sel)
		p.Set(field, forms.FieldAnswer{Options: sel})
	case render.ActionText:
		text := firstValue(in.Interaction.Values)
		if len(form.Fields) == 0 || text == "" {
			return msgTypeAnswer, nil
		}
		p.Set(field, forms.FieldAnswer{Text: text})
	case render.ActionSkip:
		if len(form.Fields) == 0 || fld.Required {
			return "This question can't be skipped.", nil
		}
		p.Set(field, forms.FieldAnswer{Skipped: true})
	default:
		return msgStaleButton, nil
	}
	return ans.advance(ctx, ch, in, c, form, p, admin)
}

// checkAnswerable returns the notice for a clarification that this user may not answer now.
func (ans answers) checkAnswerable(in channels.Inbound, c threads.Clarification) string {
	platform := in.Conv.Platform
	switch {
	case c.State == threads.StateAnswered:
		ans.r.refuse(platform, "expired", "refusing an answer to a question already answered", in)
		return msgAnswered
	case c.State != threads.StatePending:
		ans.r.refuse(platform, "expired", "refusing an answer to a withdrawn question", in)
		return msgNotOpen
	case !ans.r.now().Before(c.ExpiresAt):
		ans.r.refuse(platform, "expired", "refusing an answer to an expired question", in)
		return msgExpired
	case c.AllowedUserID != in.Identity.ChannelUserID:
		ans.r.refuse(platform, "foreign_click", "refusing an answer from someone the question was not asked of", in)
		return msgForeign
	}
	return ""
}

// typedAnswer routes a plain reply while the user's question is pending: option numbers for
// the field being asked, its text, "skip", or free text where the form allows it.
func (ans answers) typedAnswer(ctx context.Context, ch channels.Channel, in channels.Inbound, c threads.Clarification, admin bool) error {
	form := forms.Of(c)
	if form.Approval != nil {
		notice, err := ans.r.apv.typedDecision(ctx, ch, in, c, form, admin)
		if notice != "" {
			ans.r.reply(ctx, ch, in, notice)
		}
		return err
	}
	if notice := ans.checkAnswerable(in, c); notice != "" {
		ans.r.reply(ctx, ch, in, notice)
		return nil
	}
	p, err := ans.loadPartial(ctx, c.ID)
	if err != nil {
		return err
	}
	text := strings.TrimSpace(in.Text)
	notice, err := ans.typedStep(ctx, ch, in, c, form, p, text, admin)
	if notice != "" {
		ans.r.reply(ctx, ch, in, notice)
	}
	return err
}

// typedStep applies a typed reply to the field being asked and moves the form on.
func (ans answers) typedStep(ctx context.Context, ch channels.Channel, in channels.Inbound, c threads.Clarification, form runs.Form, p forms.Partial, text string, admin bool) (string, error) {
	step := p.Next(form)
	if step < 0 {
		return ans.finishAnswer(ctx, ch, in, c, form, p, text, admin)
	}
	fld := form.Fields[step]
	switch {
	case !fld.Required && strings.EqualFold(text, "skip"):
		p.Set(step, forms.FieldAnswer{Skipped: true})
	case fld.Kind == runs.FieldText:
		p.Set(step, forms.FieldAnswer{Text: text})
	default:
		opts, ok := ParseAnswer(text, len(forms.Choices(fld)), fld.Kind == runs.FieldMultiChoice)
		if !ok && fld.Kind == runs.FieldConfirm {
			opts, ok = yesNo(text)
		}
		if !ok {
			if form.AllowFreeText {
				return ans.finishAnswer(ctx, ch, in, c, form, p, text, admin)
			}
			return answerHelp(fld), nil
		}
		p.Set(step, forms.FieldAnswer{Options: opts})
	}
	return ans.advance(ctx, ch, in, c, form, p, admin)
}

func answerHelp(fld runs.FormField) string {
	n := len(forms.Choices(fld))
	if fld.Kind == runs.FieldMultiChoice {
		return fmt.Sprintf("Please reply with the numbers of your forms.Choices (1 to %d), separated by commas, e.g. 1,3.", n)
	}
	return fmt.Sprintf("Please reply with a number from 1 to %d.", n)
}

func yesNo(text string) ([]int, bool) {
	switch strings.ToLower(strings.TrimSpace(text)) {
	case "yes", "y":
		return []int{0}, true
	case "no", "n":
		return []int{1}, true
	}
	return nil, false
}

// advance asks the next unanswered field, or sends the answer when every field is in.
func (ans answers) advance(ctx context.Context, ch channels.Channel, in channels.Inbound, c threads.Clarification, form runs.Form, p forms.Partial, admin bool) (string, error) {
	next := p.Next(form)
	if next < 0 {
		return ans.finishAnswer(ctx, ch, in, c, form, p, "", admin)
	}
	if err := ans.savePartial(ctx, c, p); err != nil {
		return "", err
	}
	ans.showForm(ctx, ch, in, forms.Card(form, "", next, p, c.RunID))
	return "", nil
}

// finishAnswer queues the answer run and closes the question's card.
func (ans answers) finishAnswer(ctx context.Context, ch channels.Channel, in channels.Inbound, c threads.Clarification, form runs.Form, p forms.Partial, free string, admin bool) (string, error) {
	text := forms.Compose(form, p, free)
	if text == "" {
		return msgTypeAnswer, nil
	}
	env := ans.r.envelope(in, admin, runs.KindClarificationAnswer)
	if k, ok := conv.ParseKey(c.ConvKey); ok {
		env.Conv = k
	}
	env.ClarificationID, env.Text = c.ID, text
	if n := len(env.Text); n > runs.MaxEnvelopeBytes/2 {
		return fmt.Sprintf(msgTooLong, n, ans.r.opt.MaxMessageChars), nil
	}
	refusal, err := ans.r.enqueue(ctx, ch, in, env)
	if refusal != "" || err != nil {
		return refusal, err
	}
	if err := ans.r.opt.Inbox.Unmark(ctx, partialKey(c.ID)); err != nil {
		ans.r.log.Warn("channels: dropping partial answers failed", "question", c.ID, "err", err)
	}
	if in.Interaction != nil {
		if ed, ok := ch.(channels.Editor); ok {
			card := render.Card{Title: "Question", Status: render.StatusDone, Body: forms.JoinParagraphs(form.Question, "**Your answer:** "+text)}
			if _, err := ed.Edit(ctx, in.Interaction.Message, channels.Message{Card: &card}); err != nil && !errors.Is(err, channels.ErrNotModified) {
				ans.r.log.Debug("channels: closing the question's card failed", "question", c.ID, "err", err)
			}
		}
	}
	return "", nil
}

// showForm shows a form's next step: in place of the clicked card when possible, else as a new
// message.
func (ans answers) showForm(ctx context.Context, ch channels.Channel, in channels.Inbound, card render.Card) {
	if in.Interaction != nil {
		if ed, ok := ch.(channels.Editor); ok {
			_, err := ed.Edit(ctx, in.Interaction.Message, channels.Message{Card: &card})
			if err == nil || errors.Is(err, channels.ErrNotModified) {
				return
			}
			ans.r.log.Debug("channels: editing the form failed; sending it anew", "err", err)
		}
	}
	err := channels.RetryRateLimited(ctx, time.Minute, 3, func(ctx context.Context) error {
		_, err := ch.Send(ctx, channels.Target{Conv: in.Conv, ReplyTo: in.MessageID}, channels.Message{Card: &card})
		return err
	})
	if err != nil {
		ans.r.m.OutboundError(in.Conv.Platform, "send_failed")
		ans.r.log.Warn("channels: showing the next question failed", "conv", in.Conv.String(), "err", err)
	}
}

// openForm opens the form as a native modal where the platform can.
func (ans answers) openForm(ctx context.Context, ch channels.Channel, in channels.Inbound, form runs.Form, p forms.Partial, runID string) string {
	fo, ok := ch.(channels.FormOpener)
	card := forms.Card(form, "", 0, p, runID)
	if !ok || card.Form == nil {
		return msgTypeAnswer
	}
	if err := fo.OpenForm(ctx, in.Interaction, *card.Form); err != nil {
		ans.r.log.Warn("channels: opening the form failed", "platform", ch.Name(), "question", form.ID, "err", err)
		return msgTypeAnswer
	}
	return ""
}

// chosenOptions decodes the select values of field: each is a signed ActionChoose id.
func (ans answers) chosenOptions(values map[string][]string, token string, field int) []int {
	var out []int
	for _, vs := range values {
		for _, v := range vs {
			id, err := render.DecodeAction(ans.r.opt.ActionKey, v)
			if err == nil && id.Kind == render.ActionChoose && id.Token == token && id.Field == field {
				out = append(out, id.Option)
			}
		}
	}
	sort.Ints(out)
	return out
}

// modalAnswers fills p from a submitted modal: values by field id (signed choice ids or typed
// text); values under any other key are free text, which is returned.
func (ans answers) modalAnswers(values map[string][]string, form runs.Form, token string, p *forms.Partial) string {
	byID := map[string]int{}
	for i, f := range form.Fields {
		byID[f.ID] = i
	}
	var free []string
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		i, isField := byID[k]
		var opts []int
		var texts []string
		for _, v := range values[k] {
			if id, err := render.DecodeAction(ans.r.opt.ActionKey, v); err == nil && id.Kind == render.ActionChoose && id.Token == token {
				opts = append(opts, id.Option)
			} else if v = strings.TrimSpace(v); v != "" {
				texts = append(texts, v)
			}
		}
		switch {
		case !isField:
			free = append(free, texts...)
		case len(opts) > 0:
			sort.Ints(opts)
			p.Set(i, forms.FieldAnswer{Options: opts})
		case len(texts) > 0:
			p.Set(i, forms.FieldAnswer{Text: strings.Join(texts, ", ")})
		}
	}
	return strings.Join(free, "\n")
}

func firstValue(values map[string][]string) string {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range values[k] {
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		}
	}
	return ""
}

func (ans answers) loadPartial(ctx context.Context, formID string) (forms.Partial, error) {
	b, found, err := ans.r.opt.Inbox.Marked(ctx, partialKey(formID))
	if err != nil {
		return forms.Partial{}, fmt.Errorf("channels: reading partial answers: %w", err)
	}
	var p forms.Partial
	if found && json.Unmarshal(b, &p) != nil {
		ans.r.log.Warn("channels: unreadable partial answers; starting the form over", "question", formID)
		p = forms.Partial{}
	}
	return p, nil
}

func (ans answers) savePartial(ctx context.Context, c threads.Clarification, p forms.Partial) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("channels: encoding partial answers: %w", err)
	}
	ttl := max(c.ExpiresAt.Sub(ans.r.now()), time.Minute)
	if err := ans.r.opt.Inbox.Mark(ctx, partialKey(c.ID), b, ttl); err != nil {
		return fmt.Errorf("channels: saving partial answers: %w", err)
	}
	return nil
}
