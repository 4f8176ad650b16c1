package discord

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"

	"github.com/bwmarrin/discordgo"
)

// InvitePermissions are the permissions the invite asks for: View Channels, Send Messages, Embed
// Links, Attach Files (the rest of a long answer), Read Message History, Create Public Threads
// and Send Messages in Threads.
const InvitePermissions = int64(discordgo.PermissionViewChannel | discordgo.PermissionSendMessages |
	discordgo.PermissionEmbedLinks | discordgo.PermissionAttachFiles | discordgo.PermissionReadMessageHistory |
	discordgo.PermissionCreatePublicThreads | discordgo.PermissionSendMessagesInThreads)

// InviteURL is the OAuth2 URL that adds the application's bot to a server with the scopes bot
// and applications.commands and InvitePermissions.
func InviteURL(applicationID string) string {
	q := url.Values{}
	q.Set("client_id", applicationID)
	q.Set("scope", "bot applications.commands")
	q.Set("permissions", strconv.FormatInt(InvitePermissions, 10))
	return "https://discord.com/oauth2/authorize?" + q.Encode()
}

// FetchApplicationID asks Discord for the bot's application id (GET
// /oauth2/applications/@me); Config.ApplicationID, when set, is returned without asking.
func (c *Channel) FetchApplicationID(ctx context.Context) (string, error) {
	if c.cfg.ApplicationID != "" {
		return c.cfg.ApplicationID, nil
	}
	ep := discordgo.EndpointOAuth2 + "applications/@me"
	var raw []byte
	err := c.rest.callWaiting(ctx, "GET application", func(opts ...discordgo.RequestOption) error {
		var err error
		raw, err = c.s.RequestWithBucketID("GET", ep, nil, ep, opts...)
		return err
	})
	if err != nil {
		return "", err
	}
	var app struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &app) != nil || app.ID == "" {
		return "", errors.New("discord: GET application: unreadable answer")
	}
	return app.ID, nil
}
