package discordfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// Component types (Discord's numbers, Component Reference: "Component Types").
const (
	TypeActionRow     = 1
	TypeButton        = 2
	TypeStringSelect  = 3
	TypeTextInput     = 4
	TypeSection       = 9
	TypeTextDisplay   = 10
	TypeThumbnail     = 11
	TypeMediaGallery  = 12
	TypeFile          = 13
	TypeSeparator     = 14
	TypeContainer     = 17
	TypeLabel         = 18
	TypeFileUpload    = 19
	TypeRadioGroup    = 21
	TypeCheckboxGroup = 22
	TypeCheckbox      = 23
)

// Components V2 and modal limits the fake enforces, as Discord documents them.
const (
	// FlagComponentsV2 is the message flag IS_COMPONENTS_V2 (1 << 15): the message is made of
	// components only (no content, no embeds) and keeps the flag for good.
	FlagComponentsV2 = 1 << 15
	// MaxV2Components: "Messages allow up to 40 total components" (Component Reference), nested
	// components counted.
	MaxV2Components = 40
	// MaxV2Text is the most text across a message's text displays (4,000 characters: the API's
	// limit as the discord.js guide "Display Components" documents it).
	MaxV2Text = 4000
	// MaxModalComponents: a modal has "Between 1 and 5 (inclusive) components" (Receiving and
	// Responding: Modal).
	MaxModalComponents = 5
)

// SelectOption is an option of a string select as sent.
type SelectOption struct {
	Label       string `json:"label"`
	Value       string `json:"value"`
	Description string `json:"description,omitempty"`
	Default     bool   `json:"default,omitempty"`
}

// Component is a message or modal component as sent: an action row, a button, a select, a text
// input; a V2 message's container, section, text display, separator, media gallery, thumbnail or
// file; a modal's label (its input in Component). Only the fields of its type are set.
type Component struct {
	Type        int               `json:"type"`
	ID          int               `json:"id,omitempty"`
	Components  []Component       `json:"components,omitempty"`
	Component   *Component        `json:"component,omitempty"`
	Accessory   *Component        `json:"accessory,omitempty"`
	CustomID    string            `json:"custom_id,omitempty"`
	Label       string            `json:"label,omitempty"`
	Description string            `json:"description,omitempty"`
	Style       int               `json:"style,omitempty"`
	URL         string            `json:"url,omitempty"`
	Content     string            `json:"content,omitempty"`
	AccentColor *int              `json:"accent_color,omitempty"`
	Spoiler     bool              `json:"spoiler,omitempty"`
	Divider     *bool             `json:"divider,omitempty"`
	Spacing     int               `json:"spacing,omitempty"`
	Options     []SelectOption    `json:"options,omitempty"`
	Placeholder string            `json:"placeholder,omitempty"`
	MinValues   *int              `json:"min_values,omitempty"`
	MaxValues   *int              `json:"max_values,omitempty"`
	MinLength   *int              `json:"min_length,omitempty"`
	MaxLength   *int              `json:"max_length,omitempty"`
	Required    *bool             `json:"required,omitempty"`
	Disabled    *bool             `json:"disabled,omitempty"`
	Value       string            `json:"value,omitempty"`
	Items       []json.RawMessage `json:"items,omitempty"`
	Media       json.RawMessage   `json:"media,omitempty"`
	File        json.RawMessage   `json:"file,omitempty"`
}

// children are the components c holds: its components, a label's input, a section's accessory.
func (c Component) children() []Component {
	out := c.Components
	if c.Component != nil {
		out = append(append([]Component(nil), out...), *c.Component)
	}
	if c.Accessory != nil {
		out = append(append([]Component(nil), out...), *c.Accessory)
	}
	return out
}

// CustomIDs lists the custom_ids of cs and of everything they hold (a container's rows, a
// section's button, a label's input), depth first.
func CustomIDs(cs []Component) []string {
	var out []string
	for _, c := range cs {
		if c.CustomID != "" {
			out = append(out, c.CustomID)
		}
		out = append(out, CustomIDs(c.children())...)
	}
	return out
}

// TextDisplays is the content of every text display in cs, depth first.
func TextDisplays(cs []Component) []string {
	var out []string
	for _, c := range cs {
		if c.Type == TypeTextDisplay {
			out = append(out, c.Content)
		}
		out = append(out, TextDisplays(c.children())...)
	}
	return out
}

// CountComponents counts cs and everything they hold, as Discord counts a V2 message's 40.
func CountComponents(cs []Component) int {
	n := 0
	for _, c := range cs {
		n += 1 + CountComponents(c.children())
	}
	return n
}

// invalidForm is Discord's 400 answer to a body it refuses (code 50035, "Invalid Form Body"),
// with the errors object that names the field by its path, as the API reference shows it
// ("Error Messages": {"code": 50035, "errors": {"field": {"_errors": [{"code", "message"}]}},
// "message": "Invalid Form Body"}). The inner error codes are the fake's labels; the
// documentation shows the shape, not every code.
func invalidForm(path []string, code, message string) (int, any) {
	var errs any = map[string]any{"_errors": []any{map[string]string{"code": code, "message": message}}}
	for i := len(path) - 1; i >= 0; i-- {
		errs = map[string]any{path[i]: errs}
	}
	return http.StatusBadRequest, map[string]any{"code": 50035, "message": "Invalid Form Body", "errors": errs}
}

// componentCheck walks a message's or a modal's components with what Discord requires of them.
type componentCheck struct {
	v2    bool // a Components V2 message
	modal bool
	count int
	text  int
	ids   map[string]bool
}

// errComponent is a refused component: where (a path of field names and indexes) and why.
type errComponent struct {
	path []string
	why  string
}

func (e *errComponent) Error() string { return fmt.Sprint(e.path, ": ", e.why) }

func refuse(path []string, format string, args ...any) error {
	return &errComponent{path: append([]string(nil), path...), why: fmt.Sprintf(format, args...)}
}

func at(path []string, more ...any) []string {
	out := append([]string(nil), path...)
	for _, m := range more {
		out = append(out, fmt.Sprint(m))
	}
	return out
}

// checkComponents checks the components of a message (v2: one with IS_COMPONENTS_V2) as Discord
// does: without the flag, up to 5 action rows and nothing else at the top level (Component
// Reference: "Legacy Message Component Behavior"); with it, the top-level kinds a message takes,
// a container's and a section's children, up to 40 components in all and 4,000 characters across
// the text displays. Everywhere: a row of 1–5 buttons or one select, custom_ids of 1–100
// characters, unique in the message.
func checkComponents(cs []Component, v2 bool) error {
	k := &componentCheck{v2: v2, ids: map[string]bool{}}
	path := []string{"components"}
	if !v2 && len(cs) > MaxRows {
		return refuse(path, "Must be 5 or fewer in length.")
	}
	for i, c := range cs {
		p := at(path, i)
		if !v2 && c.Type != TypeActionRow {
			return refuse(p, "component type %d needs the IS_COMPONENTS_V2 message flag", c.Type)
		}
		switch c.Type {
		case TypeActionRow, TypeTextDisplay, TypeSection, TypeMediaGallery, TypeFile, TypeSeparator, TypeContainer:
		default:
			return refuse(p, "component type %d cannot be a top-level component of a message", c.Type)
		}
		if err := k.one(p, c); err != nil {
			return err
		}
	}
	if v2 && k.count > MaxV2Components {
		return refuse(path, "Must be %d or fewer in total, nested ones counted (got %d).", MaxV2Components, k.count)
	}
	if v2 && k.text > MaxV2Text {
		return refuse(path, "The text of text displays must be %d or fewer in length in total (got %d).", MaxV2Text, k.text)
	}
	return nil
}

// one checks component c (at path) and what it holds.
func (k *componentCheck) one(path []string, c Component) error {
	k.count++
	if err := k.customID(path, c); err != nil {
		return err
	}
	switch c.Type {
	case TypeActionRow:
		return k.row(path, c)
	case TypeButton:
		if utf8.RuneCountInString(c.Label) > 80 {
			return refuse(at(path, "label"), "Must be 80 or fewer in length.")
		}
	case TypeStringSelect:
		return checkSelect(path, c, k.modal)
	case TypeTextInput:
		return checkTextInput(path, c)
	case TypeTextDisplay:
		if c.Content == "" {
			return refuse(at(path, "content"), "This field is required")
		}
		k.text += utf8.RuneCountInString(c.Content)
	case TypeSection:
		return k.section(path, c)
	case TypeThumbnail:
		if len(c.Media) == 0 {
			return refuse(at(path, "media"), "This field is required")
		}
	case TypeMediaGallery:
		if len(c.Items) == 0 || len(c.Items) > 10 {
			return refuse(at(path, "items"), "Must be between 1 and 10 in length.")
		}
	case TypeFile:
		if len(c.File) == 0 {
			return refuse(at(path, "file"), "This field is required")
		}
	case TypeSeparator:
		if c.Spacing != 0 && c.Spacing != 1 && c.Spacing != 2 {
			return refuse(at(path, "spacing"), "Value must be one of (1, 2).")
		}
	case TypeContainer:
		return k.container(path, c)
	default:
		return refuse(path, "unknown component type %d", c.Type)
	}
	return nil
}

// customID checks c's custom_id: 1–100 characters on an interactive component (a link button
// has a url instead), unique in the message or modal.
func (k *componentCheck) customID(path []string, c Component) error {
	link := c.Type == TypeButton && c.Style == 5 // a link button has a url, not a custom_id
	if n := utf8.RuneCountInString(c.CustomID); (isInteractive(c) && !link && n == 0) || n > MaxCustomID {
		return refuse(at(path, "custom_id"), "Must be between 1 and 100 in length.")
	}
	if c.CustomID != "" {
		if k.ids[c.CustomID] {
			return refuse(at(path, "custom_id"), "Component custom id cannot be duplicated")
		}
		k.ids[c.CustomID] = true
	}
	return nil
}

// row checks an action row: 1–5 buttons, or one select alone, or in a modal a text input.
func (k *componentCheck) row(path []string, c Component) error {
	if len(c.Components) == 0 || len(c.Components) > 5 {
		return refuse(at(path, "components"), "Must be between 1 and 5 in length.")
	}
	for i, ch := range c.Components {
		p := at(path, "components", i)
		switch {
		case ch.Type == TypeButton:
		case ch.Type == TypeStringSelect || (ch.Type >= 5 && ch.Type <= 8):
			if len(c.Components) != 1 {
				return refuse(p, "A select must be alone in its action row")
			}
		case ch.Type == TypeTextInput && k.modal:
		default:
			return refuse(p, "component type %d cannot be in an action row", ch.Type)
		}
		if err := k.one(p, ch); err != nil {
			return err
		}
	}
	return nil
}

// section checks a section: 1–3 text displays and a button or a thumbnail as its accessory.
func (k *componentCheck) section(path []string, c Component) error {
	if len(c.Components) == 0 || len(c.Components) > 3 {
		return refuse(at(path, "components"), "Must be between 1 and 3 in length.")
	}
	for i, ch := range c.Components {
		if ch.Type != TypeTextDisplay {
			return refuse(at(path, "components", i), "A section holds text displays")
		}
		if err := k.one(at(path, "components", i), ch); err != nil {
			return err
		}
	}
	if c.Accessory == nil || (c.Accessory.Type != TypeButton && c.Accessory.Type != TypeThumbnail) {
		return refuse(at(path, "accessory"), "A section needs a button or a thumbnail as its accessory")
	}
	return k.one(at(path, "accessory"), *c.Accessory)
}

// container checks a container: an accent color of 0–0xFFFFFF and the kinds of component it
// may hold.
func (k *componentCheck) container(path []string, c Component) error {
	if c.AccentColor != nil && (*c.AccentColor < 0 || *c.AccentColor > 0xFFFFFF) {
		return refuse(at(path, "accent_color"), "Must be between 0 and 16777215.")
	}
	for i, ch := range c.Components {
		switch ch.Type {
		case TypeActionRow, TypeTextDisplay, TypeSection, TypeMediaGallery, TypeSeparator, TypeFile:
		default:
			return refuse(at(path, "components", i), "component type %d cannot be in a container", ch.Type)
		}
		if err := k.one(at(path, "components", i), ch); err != nil {
			return err
		}
	}
	return nil
}

func isInteractive(c Component) bool {
	switch c.Type {
	case TypeButton, TypeStringSelect, TypeTextInput, 5, 6, 7, 8, TypeFileUpload, TypeRadioGroup, TypeCheckboxGroup, TypeCheckbox:
		return true
	}
	return false
}

// checkSelect checks a string select (Component Reference: String Select): 1–25 options of a
// label and a value of up to 100 characters each, a placeholder of up to 150, min_values 0–25
// and max_values 1–25. In a modal it may not be disabled, and min_values must be omitted or at
// least 1 unless required is false.
func checkSelect(path []string, c Component, modal bool) error {
	if len(c.Options) == 0 || len(c.Options) > 25 {
		return refuse(at(path, "options"), "Must be between 1 and 25 in length.")
	}
	for i, o := range c.Options {
		if l, v := utf8.RuneCountInString(o.Label), utf8.RuneCountInString(o.Value); l == 0 || l > 100 || v == 0 || v > 100 {
			return refuse(at(path, "options", i), "label and value must be between 1 and 100 in length.")
		}
	}
	if utf8.RuneCountInString(c.Placeholder) > 150 {
		return refuse(at(path, "placeholder"), "Must be 150 or fewer in length.")
	}
	if c.MinValues != nil && (*c.MinValues < 0 || *c.MinValues > 25) {
		return refuse(at(path, "min_values"), "Must be between 0 and 25.")
	}
	if c.MaxValues != nil && (*c.MaxValues < 1 || *c.MaxValues > 25 || *c.MaxValues > len(c.Options)) {
		return refuse(at(path, "max_values"), "Must be between 1 and the number of options.")
	}
	if modal {
		if c.Disabled != nil {
			return refuse(at(path, "disabled"), "Modals can not have disabled components")
		}
		if (c.Required == nil || *c.Required) && c.MinValues != nil && *c.MinValues < 1 {
			return refuse(at(path, "min_values"), "Must be at least 1 when the select is required.")
		}
	}
	return nil
}

// checkTextInput checks a text input (Component Reference: Text Input): style 1 or 2,
// min_length 0–4000, max_length 1–4000, a placeholder of up to 100 characters, a value of up to
// 4,000.
func checkTextInput(path []string, c Component) error {
	if c.Style != 1 && c.Style != 2 {
		return refuse(at(path, "style"), "Value must be one of (1, 2).")
	}
	if c.MinLength != nil && (*c.MinLength < 0 || *c.MinLength > 4000) {
		return refuse(at(path, "min_length"), "Must be between 0 and 4000.")
	}
	if c.MaxLength != nil && (*c.MaxLength < 1 || *c.MaxLength > 4000) {
		return refuse(at(path, "max_length"), "Must be between 1 and 4000.")
	}
	if utf8.RuneCountInString(c.Placeholder) > 100 {
		return refuse(at(path, "placeholder"), "Must be 100 or fewer in length.")
	}
	if utf8.RuneCountInString(c.Value) > 4000 {
		return refuse(at(path, "value"), "Must be 4000 or fewer in length.")
	}
	return nil
}

// checkModal checks a modal's data (Receiving and Responding: Modal; Component Reference: Label,
// Text Input, String Select): a title of 1–45 characters, a custom_id of 1–100, 1–5 components,
// each a label (a label of 1–45 characters, a description of up to 100, one input: a text input,
// a select, a file upload, a radio group or checkboxes) or a text display — or, as modals were
// before labels (deprecated, still taken), an action row of one text input with its own label.
// custom_ids are unique in the modal.
func checkModal(title, customID string, cs []Component) error {
	if n := utf8.RuneCountInString(title); n == 0 || n > 45 {
		return refuse([]string{"data", "title"}, "Must be between 1 and 45 in length.")
	}
	if n := utf8.RuneCountInString(customID); n == 0 || n > MaxCustomID {
		return refuse([]string{"data", "custom_id"}, "Must be between 1 and 100 in length.")
	}
	path := []string{"data", "components"}
	if len(cs) == 0 || len(cs) > MaxModalComponents {
		return refuse(path, "Must be between 1 and 5 in length.")
	}
	k := &componentCheck{modal: true, ids: map[string]bool{}}
	for i, c := range cs {
		p := at(path, i)
		switch c.Type {
		case TypeLabel:
			if n := utf8.RuneCountInString(c.Label); n == 0 || n > 45 {
				return refuse(at(p, "label"), "Must be between 1 and 45 in length.")
			}
			if utf8.RuneCountInString(c.Description) > 100 {
				return refuse(at(p, "description"), "Must be 100 or fewer in length.")
			}
			in := c.Component
			if in == nil {
				return refuse(at(p, "component"), "This field is required")
			}
			switch in.Type {
			case TypeTextInput, TypeStringSelect, 5, 6, 7, 8, TypeFileUpload, TypeRadioGroup, TypeCheckboxGroup, TypeCheckbox:
			default:
				return refuse(at(p, "component"), "component type %d cannot be in a label", in.Type)
			}
			if err := k.one(at(p, "component"), *in); err != nil {
				return err
			}
		case TypeTextDisplay:
			if err := k.one(p, c); err != nil {
				return err
			}
		case TypeActionRow:
			if len(c.Components) != 1 || c.Components[0].Type != TypeTextInput {
				return refuse(p, "An action row in a modal holds one text input")
			}
			if n := utf8.RuneCountInString(c.Components[0].Label); n == 0 || n > 45 {
				return refuse(at(p, "components", 0, "label"), "Must be between 1 and 45 in length.")
			}
			if err := k.one(p, c); err != nil {
				return err
			}
		default:
			return refuse(p, "component type %d cannot be in a modal", c.Type)
		}
	}
	return nil
}

// formErr is the 400 answer for err, a refused component (or any other error, at the root).
func formErr(err error) (int, any) {
	var e *errComponent
	if errors.As(err, &e) {
		return invalidForm(e.path, "COMPONENT_INVALID", e.why)
	}
	return invalidForm(nil, "INVALID", err.Error())
}
