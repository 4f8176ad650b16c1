package jsonwire

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// SameAsUnmarshal says how decode's reading of data differs from what json.Unmarshal makes of
// it in a T: nil when both refuse it, or both read it into equal values. The tests and fuzz
// targets of the one-pass decoders hold them to it.
func SameAsUnmarshal[T any](data []byte, decode func([]byte) (T, error)) error {
	got, err := decode(data)
	var want T
	wantErr := json.Unmarshal(data, &want)
	switch {
	case (err == nil) != (wantErr == nil):
		return fmt.Errorf("%q: the decoder's error is %v, encoding/json's %v", data, err, wantErr)
	case err == nil && !reflect.DeepEqual(got, want):
		return fmt.Errorf("%q:\nthe decoder reads %+v\nencoding/json reads %+v", data, got, want)
	}
	return nil
}
