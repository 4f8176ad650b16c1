package tools

import "time"

// Server configures one MCP server. Exactly one of Command (stdio) and URL (streamable HTTP)
// is set.
type Server struct {
	// Name is the server's key in tools.servers; its tools are offered as <Name>__<tool>.
	Name string
	// Command is the program and its arguments, for a stdio server.
	Command []string
	// Env is the whole environment of a stdio server: nothing of the bot's own environment
	// reaches it unless listed here. EnvFiles names files whose trimmed contents are values
	// (secrets), read at every (re)connect.
	Env      map[string]string
	EnvFiles map[string]string
	// Dir is the working directory of a stdio server ("" keeps the bot's).
	Dir string
	// URL is the endpoint of a streamable-HTTP server.
	URL string
	// Headers are sent with every request to an HTTP server; HeaderFiles name files whose
	// trimmed contents are values (secrets), read at every (re)connect.
	Headers     map[string]string
	HeaderFiles map[string]string
	// Include and Exclude are globs (path.Match) over the server's own tool names: a tool is
	// offered when it matches an Include glob (or Include is empty) and no Exclude glob.
	Include, Exclude []string
	// CallTimeout overrides Config.CallTimeout for this server's tools.
	CallTimeout time.Duration
}

// Approval says whether a call waits for a person's decision before it runs.
type Approval string

// Approval modes.
const (
	ApprovalNever  Approval = "never"
	ApprovalAlways Approval = "always" // the requester decides
	ApprovalAdmin  Approval = "admin"  // an admin decides
)

// Who may use a tool, in Rule.Allow.
const (
	AllowEveryone = "everyone"
	AllowAdmins   = "admins"
)

// Rule is one policy rule. The first rule with a glob matching a tool's offered name
// (<server>__<tool>) decides for it; a tool no rule names is open to everyone, without approval.
type Rule struct {
	Tools []string
	// Allow is AllowEveryone, AllowAdmins, or channel_user_ids (an id alone, or
	// <platform>:<id> to name one platform's user).
	Allow    []string
	Approval Approval
}

// Subagent tool modes, in Config.Subagents.
const (
	SubagentsInherit = "inherit"
	SubagentsNone    = "none"
)

// Config is the tools configuration, as cmd/bot builds it from the tools.* keys, which the config
// package validates; a Config that is not valid never panics here, its servers just stay down.
type Config struct {
	Servers []Server
	Policy  []Rule
	// Subagents is [SubagentsInherit] (children get the caller's tools that need no approval),
	// [SubagentsNone], or globs over offered names: children get the caller's tools matching
	// one, those needing approval included.
	Subagents []string
	// ApprovalTTL is how long an approval waits for its decision.
	ApprovalTTL time.Duration
	// CallTimeout bounds one call (default DefaultCallTimeout).
	CallTimeout time.Duration
	// ConnectTimeout bounds one connection attempt, the initial listing included.
	ConnectTimeout time.Duration
	// MaxResultBytes cuts what the model reads of one result (default DefaultMaxResultBytes).
	MaxResultBytes int
	// IdentityKey signs the identity headers sent to HTTP servers; empty sends them unsigned.
	IdentityKey []byte
}

// Defaults.
const (
	DefaultCallTimeout    = 60 * time.Second
	DefaultConnectTimeout = 20 * time.Second
	DefaultMaxResultBytes = 16 << 10
	DefaultApprovalTTL    = 10 * time.Minute
)

// Separator joins a server's name and its tool's name in the offered name.
const Separator = "__"

func (c Config) withDefaults() Config {
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.MaxResultBytes <= 0 {
		c.MaxResultBytes = DefaultMaxResultBytes
	}
	if c.ApprovalTTL <= 0 {
		c.ApprovalTTL = DefaultApprovalTTL
	}
	if len(c.Subagents) == 0 {
		c.Subagents = []string{SubagentsInherit}
	}
	return c
}
