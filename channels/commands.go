package channels

// commandSpecs are the commands, the same words on every platform.
var commandSpecs = []CommandSpec{
	{Name: "help", Description: "List the commands"},
	{Name: "new", Description: "Start a new conversation"},
	{Name: "cancel", Description: "Cancel the running and queued requests in this chat, and any open question"},
	{Name: "status", Description: "Show this chat's queue and any open question"},
	{Name: "whoami", Description: "Show the id the bot sees for you"},
	{Name: "allow", Description: "Allow a user: allow <user id>", AdminOnly: true},
	{Name: "deny", Description: "Deny a user: deny <user id>", AdminOnly: true},
	{Name: "admins", Description: "List this platform's admins", AdminOnly: true},
	{Name: "stats", Description: "Queue depth, workers, outcomes, dead letters", AdminOnly: true},
	{Name: "deadletters", Description: "deadletters [list | replay <run id> | drop <run id>]", AdminOnly: true},
	{Name: "pause", Description: "Stop taking new requests", AdminOnly: true},
	{Name: "resume", Description: "Take new requests again", AdminOnly: true},
	{Name: "model", Description: "Show or set this chat's model: model [name]", AdminOnly: true},
	{Name: "profile", Description: "Show which agent profile this chat gets, and why", AdminOnly: true},
	{Name: "tools", Description: "List the tool servers and their tools; tools reload reconnects them (admins)"},
}

// Commands returns every command for adapters' RegisterCommands (a fresh copy).
func Commands() []CommandSpec { return append([]CommandSpec(nil), commandSpecs...) }

// LookupCommand finds a command by its name.
func LookupCommand(name string) (CommandSpec, bool) {
	for _, c := range commandSpecs {
		if c.Name == name {
			return c, true
		}
	}
	return CommandSpec{}, false
}
