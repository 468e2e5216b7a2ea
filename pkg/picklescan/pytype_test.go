package picklescan

import (
	"math/big"
	"testing"

	"github.com/nlpodyssey/gopickle/pytorch"
	"github.com/nlpodyssey/gopickle/types"
)

func TestPyType(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{nil, "None"}, {types.NewDict(), "dict"}, {types.NewOrderedDict(), "OrderedDict"},
		{types.NewSet(), "set"}, {&types.FrozenSet{}, "frozenset"}, {types.NewList(), "list"},
		{types.NewTupleFromSlice(nil), "tuple"}, {"s", "str"}, {3, "int"}, {big.NewInt(3), "int"},
		{2.5, "float"}, {true, "bool"}, {[]byte("b"), "bytes"}, {types.NewByteArray(), "bytearray"},
		{&pytorch.Tensor{}, "torch.Tensor"}, {struct{}{}, "value of an unsupported type"},
	} {
		if got := PyType(c.v); got != c.want {
			t.Errorf("PyType(%#v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestTorchDtype(t *testing.T) {
	for _, c := range []struct {
		storage any
		want    string
	}{
		{&pytorch.FloatStorage{}, "torch.float32"}, {&pytorch.DoubleStorage{}, "torch.float64"},
		{&pytorch.HalfStorage{}, "torch.float16"}, {&pytorch.BFloat16Storage{}, "torch.bfloat16"},
		{&pytorch.CharStorage{}, "torch.int8"}, {&pytorch.ShortStorage{}, "torch.int16"},
		{&pytorch.IntStorage{}, "torch.int32"}, {&pytorch.LongStorage{}, "torch.int64"},
		{&pytorch.ByteStorage{}, "torch.uint8"}, {&pytorch.BoolStorage{}, "torch.bool"},
		{nil, "an unsupported dtype"},
	} {
		if got := TorchDtype(c.storage); got != c.want {
			t.Errorf("TorchDtype(%T) = %q, want %q", c.storage, got, c.want)
		}
	}
}
