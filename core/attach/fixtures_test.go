package attach

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
	"unicode/utf16"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Files of every kind, built from their formats' real encoders or headers.

func picture() image.Image {
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	img.Set(1, 1, color.RGBA{R: 200, A: 255})
	return img
}

func pngFile(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, picture()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegFile(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, picture(), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gifFile(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := gif.Encode(&b, picture(), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// riff is a RIFF file of form (WEBP, WAVE) holding one chunk.
func riff(form, chunk string, payload []byte) []byte {
	body := append([]byte(form+chunk), binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))...)
	body = append(body, payload...)
	return append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...), body...)
}

func webpFile() []byte {
	return riff("WEBP", "VP8L", []byte{0x2f, 0, 0, 0, 0x10, 0x07, 0x10, 0x11, 0x11, 0x88, 0x88, 0xfe, 0x07, 0})
}

func wavFile() []byte {
	return riff("WAVE", "fmt ", []byte{1, 0, 1, 0, 0x40, 0x1f, 0, 0, 0x80, 0x3e, 0, 0, 2, 0, 16, 0})
}

// oggFile is the first page of an OGG stream whose first packet starts with codec.
func oggFile(codec string) []byte {
	b := []byte("OggS\x00\x02")
	b = append(b, make([]byte, 8+4+4+4)...) // granule, serial, sequence, checksum
	b = append(b, 1, byte(len(codec)+11))   // one segment
	b = append(b, codec...)
	return append(b, 1, 2, 0x38, 1, 0x80, 0xbb, 0, 0, 0, 0, 0)
}

// ftypFile is the start of an ISO media file of major brand brand.
func ftypFile(brand string) []byte {
	b := []byte{0, 0, 0, 0x18}
	b = append(b, "ftyp"+brand+"\x00\x00\x02\x00isommp41"...)
	return append(b, 0, 0, 0, 8, 'f', 'r', 'e', 'e')
}

func elfFile() []byte {
	return append([]byte("\x7fELF\x02\x01\x01\x00"), make([]byte, 56)...)
}

func peFile() []byte {
	b := make([]byte, 128)
	copy(b, "MZ\x90\x00")
	binary.LittleEndian.PutUint32(b[0x3c:], 0x40)
	copy(b[0x40:], "PE\x00\x00")
	return b
}

func utf16File(s string, order binary.AppendByteOrder) []byte {
	var b []byte
	if order == binary.BigEndian {
		b = append(b, 0xFE, 0xFF)
	} else {
		b = append(b, 0xFF, 0xFE)
	}
	for _, u := range utf16.Encode([]rune(s)) {
		b = order.AppendUint16(b, u)
	}
	return b
}
