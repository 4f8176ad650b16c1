package main

import (
	"context"
	"fmt"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
)

// fileFetchers downloads the files users send through the channel of their platform. It is
// filled once the channels are built, before any run starts.
type fileFetchers map[string]channels.FileFetcher

func (f fileFetchers) fetch(ctx context.Context, k conv.Key, a conv.Attachment, limit int64) ([]byte, error) {
	ch, ok := f[k.Platform]
	if !ok {
		return nil, fmt.Errorf("%s does not download files", k.Platform)
	}
	return ch.FetchFile(ctx, k, a, limit)
}
