package picklescan

import (
	"math/big"

	"github.com/nlpodyssey/gopickle/pytorch"
	"github.com/nlpodyssey/gopickle/types"
)

// PyType names the Python type of a value gopickle decoded, for errors: the reader of a
// pickle knows Python's types, not gopickle's Go ones (and %v of those prints pointers).
func PyType(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case *types.Dict:
		return "dict"
	case *types.OrderedDict:
		return "OrderedDict"
	case *types.Set:
		return "set"
	case *types.FrozenSet:
		return "frozenset"
	case *types.List:
		return "list"
	case *types.Tuple:
		return "tuple"
	case string:
		return "str"
	case int, *big.Int:
		return "int"
	case float64:
		return "float"
	case bool:
		return "bool"
	case []byte:
		return "bytes"
	case *types.ByteArray:
		return "bytearray"
	case *pytorch.Tensor:
		return "torch.Tensor"
	}
	return "value of an unsupported type"
}

// TorchDtype names the element type of a tensor's storage as PyTorch does.
func TorchDtype(storage any) string {
	switch storage.(type) {
	case *pytorch.FloatStorage:
		return "torch.float32"
	case *pytorch.DoubleStorage:
		return "torch.float64"
	case *pytorch.HalfStorage:
		return "torch.float16"
	case *pytorch.BFloat16Storage:
		return "torch.bfloat16"
	case *pytorch.CharStorage:
		return "torch.int8"
	case *pytorch.ShortStorage:
		return "torch.int16"
	case *pytorch.IntStorage:
		return "torch.int32"
	case *pytorch.LongStorage:
		return "torch.int64"
	case *pytorch.ByteStorage:
		return "torch.uint8"
	case *pytorch.BoolStorage:
		return "torch.bool"
	}
	return "an unsupported dtype"
}
