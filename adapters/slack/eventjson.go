package slack

import "github.com/switchboard-bot/switchboard/internal/jsonwire"

// Every message reaches the bot as an Events API payload, and encoding/json, reading it into a
// callback through reflection, was 2–3 % of the bot's CPU a message. readCallback reads it in
// one pass, skipping what the adapter does not read (a message's blocks, most of it), and gives
// up — decodeCallback then uses encoding/json, which also says what is wrong — on anything it
// would not read exactly as encoding/json does (jsonwire.Reader). FuzzReadCallback checks it.

var (
	callbackKeys      = jsonwire.Keys{Names: []string{"type", "challenge", "team_id", "enterprise_id", "event_id", "event", "is_enterprise_install", "authorizations"}}
	authorizationKeys = jsonwire.Keys{Names: []string{"user_id", "is_bot", "enterprise_id", "is_enterprise_install"}}
	eventKeys         = jsonwire.Keys{Names: []string{"type", "subtype", "channel", "channel_type", "user", "user_team", "team", "text", "ts", "thread_ts", "bot_id", "files", "assistant_thread", "tokens"}}
	fileKeys          = jsonwire.Keys{Names: []string{"id", "name", "mimetype", "size", "url_private"}}
	assistantKeys     = jsonwire.Keys{Names: []string{"user_id", "channel_id", "thread_ts"}}
	tokensKeys        = jsonwire.Keys{Names: []string{"bot"}}
)

// readCallback reads a callback into cb as json.Unmarshal would, or gives up (jsonwire.Decode).
func readCallback(r *jsonwire.Reader, cb *callback) {
	r.Object(&callbackKeys, func(k int) {
		switch k {
		case 0:
			cb.Type = r.Str()
		case 1:
			cb.Challenge = r.Str()
		case 2:
			cb.TeamID = r.Str()
		case 3:
			cb.EnterpriseID = r.Str()
		case 4:
			cb.EventID = r.Str()
		case 5:
			cb.Event = &innerEvent{}
			readEvent(r, cb.Event)
		case 6:
			cb.IsEnterpriseInstall = r.Bool()
		case 7:
			cb.Authorizations = []authorization{}
			r.Array(func() {
				var a authorization
				r.Object(&authorizationKeys, func(k int) {
					switch k {
					case 0:
						a.UserID = r.Str()
					case 1:
						a.IsBot = r.Bool()
					case 2:
						a.EnterpriseID = r.Str()
					case 3:
						a.IsEnterpriseInstall = r.Bool()
					}
				})
				cb.Authorizations = append(cb.Authorizations, a)
			})
		}
	})
}

func readEvent(r *jsonwire.Reader, ev *innerEvent) {
	// The string fields, in eventKeys' order; files, assistant_thread and tokens follow them.
	strs := [...]*string{&ev.Type, &ev.Subtype, &ev.Channel, &ev.ChannelType, &ev.User, &ev.UserTeam, &ev.Team, &ev.Text, &ev.TS, &ev.ThreadTS, &ev.BotID}
	r.Object(&eventKeys, func(k int) {
		switch k - len(strs) {
		default:
			*strs[k] = r.Str()
		case 0: // files
			ev.Files = []eventFile{}
			r.Array(func() {
				var f eventFile
				r.Object(&fileKeys, func(k int) {
					switch k {
					case 0:
						f.ID = r.Str()
					case 1:
						f.Name = r.Str()
					case 2:
						f.MIME = r.Str()
					case 3:
						f.Size = int64(r.Int())
					case 4:
						f.URLPrivate = r.Str()
					}
				})
				ev.Files = append(ev.Files, f)
			})
		case 1: // assistant_thread
			at := &ev.AssistantThread
			r.Object(&assistantKeys, func(k int) {
				switch k {
				case 0:
					at.UserID = r.Str()
				case 1:
					at.ChannelID = r.Str()
				case 2:
					at.ThreadTS = r.Str()
				}
			})
		case 2: // tokens
			r.Object(&tokensKeys, func(int) {
				ev.Tokens.Bot = []string{}
				r.Array(func() { ev.Tokens.Bot = append(ev.Tokens.Bot, r.Str()) })
			})
		}
	})
}
