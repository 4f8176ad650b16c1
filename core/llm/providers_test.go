package llm

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// namedProvider is a Scripted provider under a name of its own.
type namedProvider struct {
	*Scripted
	name string
}

func (n namedProvider) Name() string { return n.name }

func TestProvidersDispatchByTheRequestsProvider(t *testing.T) {
	def := ScriptFunc(func(Request) Reply { return Reply{Text: "from the default"} })
	cheap := ScriptFunc(func(Request) Reply { return Reply{Text: "from cheap"} })
	vision := ScriptFunc(func(Request) Reply { return Reply{Text: "from vision"} })
	p := NewProviders(namedProvider{def, "deepseek"}, map[string]Provider{"cheap": cheap, "vision": vision, "": cheap, "gone": nil})
	tests := []struct {
		provider, want string
	}{
		{"", "from the default"},
		{"cheap", "from cheap"},
		{"vision", "from vision"},
	}
	for _, tt := range tests {
		t.Run("provider "+tt.provider, func(t *testing.T) {
			var deltas string
			resp, err := p.Stream(context.Background(), Request{Provider: tt.provider, Messages: []Message{{Role: RoleUser, Content: "hi"}}},
				func(d Delta) { deltas += d.Content })
			if err != nil || resp.Content != tt.want || deltas != tt.want {
				t.Fatalf("resp %+v (deltas %q), err %v, want %q", resp, deltas, err, tt.want)
			}
		})
	}
	if def.Calls() != 1 || cheap.Calls() != 1 || vision.Calls() != 1 {
		t.Errorf("calls: default %d, cheap %d, vision %d; want one each", def.Calls(), cheap.Calls(), vision.Calls())
	}
	if p.Name() != "deepseek" {
		t.Errorf("Name = %q, want the default's", p.Name())
	}
	if got := p.Names(); !slices.Equal(got, []string{"cheap", "vision"}) { // not "gone", nor "nope"
		t.Errorf("Names = %v", got)
	}
}

func TestProvidersRefuseAnUnknownProviderForGood(t *testing.T) {
	def := NewScripted()
	for _, named := range []map[string]Provider{nil, {"cheap": NewScripted()}} {
		p := NewProviders(def, named)
		_, err := p.Stream(context.Background(), Request{Provider: "gpt-9"}, nil)
		if !errors.Is(err, ErrUnknownProvider) || Temporary(err) {
			t.Fatalf("err = %v, want ErrUnknownProvider, not temporary", err)
		}
	}
	if def.Calls() != 0 {
		t.Errorf("the default was called %d times for an unknown name", def.Calls())
	}
}

func TestProvidersCopyTheMap(t *testing.T) {
	named := map[string]Provider{"a": NewScripted(Reply{Text: "a"})}
	p := NewProviders(NewScripted(), named)
	delete(named, "a")
	if !slices.Contains(p.Names(), "a") {
		t.Fatal("changing the caller's map changed the Providers")
	}
}

func TestProvidersPassOnTheProvidersErrors(t *testing.T) {
	p := NewProviders(NewScripted(), map[string]Provider{"down": NewScripted(Reply{Err: ErrUnavailable})})
	_, err := p.Stream(context.Background(), Request{Provider: "down"}, nil)
	if !errors.Is(err, ErrUnavailable) || !Temporary(err) {
		t.Fatalf("err = %v, want the provider's own, temporary", err)
	}
}
