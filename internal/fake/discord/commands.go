package discordfake

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Command is a registered application command as the fake stores it.
type Command struct {
	ID                       string          `json:"id"`
	ApplicationID            string          `json:"application_id"`
	GuildID                  string          `json:"guild_id,omitempty"`
	Name                     string          `json:"name"`
	Description              string          `json:"description"`
	Type                     int             `json:"type,omitempty"`
	Options                  json.RawMessage `json:"options,omitempty"`
	DefaultMemberPermissions *string         `json:"default_member_permissions"`
	Version                  string          `json:"version"`
}

// commands are the application commands registered globally and per guild: GET and the bulk
// overwrite PUT of /applications/{app}/commands and /applications/{app}/guilds/{guild}/commands.
type commands struct {
	st *store
	// Guarded by st.mu.
	byGuild map[string]json.RawMessage // "" (global) or guild id → JSON array
	sent    map[string]json.RawMessage // "" or guild id → the last accepted bulk overwrite as sent
	puts    int
}

func newCommands(st *store) *commands {
	return &commands{st: st, byGuild: map[string]json.RawMessage{}, sent: map[string]json.RawMessage{}}
}

// Commands returns the commands registered globally (guild "") or for a guild.
func (cm *commands) Commands(guild string) []Command {
	cm.st.mu.Lock()
	raw := cm.byGuild[guild]
	cm.st.mu.Unlock()
	var out []Command
	_ = json.Unmarshal(raw, &out)
	return out
}

// CommandOverwrites counts successful bulk-overwrite PUTs (global and guild).
func (cm *commands) CommandOverwrites() int {
	cm.st.mu.Lock()
	defer cm.st.mu.Unlock()
	return cm.puts
}

func (cm *commands) getCommands(_ http.ResponseWriter, r *http.Request, _ []byte) (int, any) {
	if r.PathValue("app") != ApplicationID {
		return errorResp(http.StatusNotFound, 10002, "Unknown Application")
	}
	cm.st.mu.Lock()
	defer cm.st.mu.Unlock()
	raw := cm.byGuild[r.PathValue("guild")]
	if raw == nil {
		raw = json.RawMessage("[]")
	}
	return http.StatusOK, raw
}

// putCommands is a bulk overwrite. The body must be what the route documents (Bulk Overwrite
// Global/Guild Application Commands, JSON params; Application Command Option Structure): a list of
// commands of the documented fields only, each option with the fields valid for its type only,
// and null only where a field is nullable. Anything else is refused with Discord's 400 Invalid
// Form Body (50035) naming the field.
func (cm *commands) putCommands(_ http.ResponseWriter, r *http.Request, body []byte) (int, any) {
	if r.PathValue("app") != ApplicationID {
		return errorResp(http.StatusNotFound, 10002, "Unknown Application")
	}
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return errorResp(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
	}
	if len(raw) > 100 {
		return errorResp(http.StatusBadRequest, 30032, "Maximum number of application commands reached (100)")
	}
	for i, c := range raw {
		if st, resp := checkCommand([]string{strconv.Itoa(i)}, c); st != 0 {
			return st, resp
		}
	}
	var cmds []Command
	if err := json.Unmarshal(body, &cmds); err != nil {
		return invalidForm(nil, "BASE_TYPE_BAD_TYPE", err.Error())
	}
	guild := r.PathValue("guild")
	cm.st.mu.Lock()
	defer cm.st.mu.Unlock()
	for i := range cmds {
		c := &cmds[i]
		if c.ID == "" {
			c.ID = cm.st.newIDLocked()
		}
		c.ApplicationID, c.GuildID = ApplicationID, guild
		if c.Type == 0 {
			c.Type = 1
		}
		c.Version = strconv.FormatUint(cm.st.nextID, 10)
	}
	stored, _ := json.Marshal(cmds)
	cm.byGuild[guild] = stored
	cm.sent[guild] = append(json.RawMessage(nil), body...)
	cm.puts++
	return http.StatusOK, json.RawMessage(stored)
}

// CommandsSent is the body of the last bulk overwrite the fake accepted for guild ("" global),
// as the bot sent it; nil when there was none.
func (cm *commands) CommandsSent(guild string) json.RawMessage {
	cm.st.mu.Lock()
	defer cm.st.mu.Unlock()
	return append(json.RawMessage(nil), cm.sent[guild]...)
}

// A command's fields in a bulk overwrite, and whether each may be null ("?" in the docs).
var commandFields = map[string]bool{
	"id": false, "name": false, "name_localizations": true, "description": false, "description_localizations": true,
	"options": false, "default_member_permissions": true, "dm_permission": true, "default_permission": false,
	"integration_types": false, "contexts": false, "type": false, "nsfw": false, "handler": false,
}

// Option types (Application Command Option Type).
const (
	optSubCommand      = 1
	optSubCommandGroup = 2
	optString          = 3
	optInteger         = 4
	optChannel         = 7
	optNumber          = 10
	optAttachment      = 11
)

// optionFields says, for each field of an option beyond type, name, description and their
// localizations, the option types it is valid for (Application Command Option Structure:
// "Valid Option Types"): required on all but subcommands and groups, choices and autocomplete
// on STRING, INTEGER and NUMBER, options on subcommands and groups, and so on.
var optionFields = map[string]func(t int) bool{
	"required":      func(t int) bool { return t != optSubCommand && t != optSubCommandGroup },
	"choices":       func(t int) bool { return t == optString || t == optInteger || t == optNumber },
	"autocomplete":  func(t int) bool { return t == optString || t == optInteger || t == optNumber },
	"options":       func(t int) bool { return t == optSubCommand || t == optSubCommandGroup },
	"channel_types": func(t int) bool { return t == optChannel },
	"min_value":     func(t int) bool { return t == optInteger || t == optNumber },
	"max_value":     func(t int) bool { return t == optInteger || t == optNumber },
	"min_length":    func(t int) bool { return t == optString },
	"max_length":    func(t int) bool { return t == optString },
	"file_types":    func(t int) bool { return t == optAttachment },
}

func isNull(raw json.RawMessage) bool { return strings.TrimSpace(string(raw)) == "null" }

// nameOK is a command or option name: 1–32 characters, lower case, no spaces (Application
// Command Naming).
func nameOK(raw json.RawMessage) bool {
	var n string
	if json.Unmarshal(raw, &n) != nil {
		return false
	}
	l := utf8.RuneCountInString(n)
	return l >= 1 && l <= 32 && n == strings.ToLower(n) && !strings.ContainsAny(n, " \t\n")
}

func descriptionOK(raw json.RawMessage) bool {
	var d string
	if json.Unmarshal(raw, &d) != nil {
		return false
	}
	l := utf8.RuneCountInString(d)
	return l >= 1 && l <= 100
}

// checkCommand checks one command of a bulk overwrite at path.
func checkCommand(path []string, c map[string]json.RawMessage) (int, any) {
	for _, f := range slices.Sorted(maps.Keys(c)) {
		raw := c[f]
		nullable, known := commandFields[f]
		if !known {
			return invalidForm(append(path, f), "UNKNOWN_FIELD", "This field is not one the route takes")
		}
		if isNull(raw) && !nullable {
			return invalidForm(append(path, f), "BASE_TYPE_BAD_TYPE", "This field cannot be null")
		}
	}
	if !nameOK(c["name"]) {
		return invalidForm(append(path, "name"), "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
	}
	typ := 1
	if raw, ok := c["type"]; ok && json.Unmarshal(raw, &typ) != nil {
		return invalidForm(append(path, "type"), "BASE_TYPE_BAD_TYPE", "Value is not int.")
	}
	if typ == 1 && !descriptionOK(c["description"]) {
		return invalidForm(append(path, "description"), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
	}
	if raw, ok := c["options"]; ok {
		if typ != 1 {
			return invalidForm(append(path, "options"), "APPLICATION_COMMAND_OPTIONS_TYPE_INVALID", "Only CHAT_INPUT commands take options")
		}
		return checkOptions(append(path, "options"), raw)
	}
	return 0, nil
}

// checkOptions checks a list of options at path: at most 25, names unique, required ones first,
// each with the fields of its type only.
func checkOptions(path []string, raw json.RawMessage) (int, any) {
	var opts []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &opts); err != nil {
		return invalidForm(path, "BASE_TYPE_BAD_TYPE", "Must be a list of options")
	}
	if len(opts) > 25 {
		return invalidForm(path, "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
	}
	names := map[string]bool{}
	optional := false
	for i, o := range opts {
		p := append(append([]string(nil), path...), strconv.Itoa(i))
		var t int
		if json.Unmarshal(o["type"], &t) != nil || t < optSubCommand || t > optAttachment {
			return invalidForm(append(p, "type"), "BASE_TYPE_CHOICES", "Value must be one of the option types.")
		}
		for _, f := range slices.Sorted(maps.Keys(o)) {
			v := o[f]
			switch f {
			case "type", "name", "description":
			case "name_localizations", "description_localizations":
				continue // nullable
			default:
				valid, known := optionFields[f]
				if !known {
					return invalidForm(append(p, f), "UNKNOWN_FIELD", "This field is not one an option takes")
				}
				if !valid(t) {
					return invalidForm(append(p, f), "APPLICATION_COMMAND_OPTION_FIELD_INVALID",
						"This field is not valid for an option of type "+strconv.Itoa(t))
				}
			}
			if isNull(v) {
				return invalidForm(append(p, f), "BASE_TYPE_BAD_TYPE", "This field cannot be null")
			}
		}
		if !nameOK(o["name"]) {
			return invalidForm(append(p, "name"), "APPLICATION_COMMAND_INVALID_NAME", "Option name is invalid")
		}
		var name string
		_ = json.Unmarshal(o["name"], &name)
		if names[name] {
			return invalidForm(append(p, "name"), "APPLICATION_COMMAND_OPTIONS_NAME_ALREADY_EXISTS", "Option names must be unique")
		}
		names[name] = true
		if !descriptionOK(o["description"]) {
			return invalidForm(append(p, "description"), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
		}
		var required bool
		_ = json.Unmarshal(o["required"], &required)
		if required && optional {
			return invalidForm(append(p, "required"), "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID", "Required options must be placed before non-required options")
		}
		optional = optional || !required
		if sub, ok := o["options"]; ok {
			if st, resp := checkOptions(append(p, "options"), sub); st != 0 {
				return st, resp
			}
		}
	}
	return 0, nil
}
