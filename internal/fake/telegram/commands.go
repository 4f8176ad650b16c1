package telegramfake

import (
	"encoding/json"
	"sync"
)

// Command is a bot command as setMyCommands takes it.
type Command struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// commands are the bot's command list (setMyCommands, getMyCommands).
type commands struct {
	mu *sync.Mutex
	// raw is the list as last set, guarded by mu.
	raw json.RawMessage
}

func (cm *commands) setMyCommands(p map[string]string) (any, *apiError) {
	var cmds []Command
	if err := json.Unmarshal([]byte(p["commands"]), &cmds); err != nil {
		return nil, badRequest("can't parse commands JSON object")
	}
	for _, c := range cmds {
		if c.Command == "" || len(c.Command) > 32 || c.Description == "" || len(c.Description) > 256 {
			return nil, badRequest("BOT_COMMAND_INVALID")
		}
		for _, r := range c.Command {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
				return nil, badRequest("BOT_COMMAND_INVALID")
			}
		}
	}
	raw, _ := json.Marshal(cmds)
	cm.raw = raw
	return true, nil
}

func (cm *commands) getMyCommands(map[string]string) (any, *apiError) {
	return cm.raw, nil
}

// Commands returns the bot's command list as last set.
func (cm *commands) Commands() []Command {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	var out []Command
	_ = json.Unmarshal(cm.raw, &out)
	return out
}
