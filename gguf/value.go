package gguf

import "fmt"

// ValueType is the type tag of a metadata value, as stored in the file.
type ValueType uint32

// The GGUF metadata value types.
const (
	ValueUint8   ValueType = 0
	ValueInt8    ValueType = 1
	ValueUint16  ValueType = 2
	ValueInt16   ValueType = 3
	ValueUint32  ValueType = 4
	ValueInt32   ValueType = 5
	ValueFloat32 ValueType = 6
	ValueBool    ValueType = 7
	ValueString  ValueType = 8
	ValueArray   ValueType = 9
	ValueUint64  ValueType = 10
	ValueInt64   ValueType = 11
	ValueFloat64 ValueType = 12
)

var valueTypeNames = [...]string{
	"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
	"bool", "string", "array", "uint64", "int64", "float64",
}

// String returns the type's name ("uint32", "string", ...).
func (v ValueType) String() string {
	if int(v) < len(valueTypeNames) {
		return valueTypeNames[v]
	}
	return fmt.Sprintf("valuetype(%d)", uint32(v))
}

// fixedSize is the encoded size of a scalar value type, 0 for string and
// array (variable) and unknown types.
func (v ValueType) fixedSize() int {
	switch v {
	case ValueUint8, ValueInt8, ValueBool:
		return 1
	case ValueUint16, ValueInt16:
		return 2
	case ValueUint32, ValueInt32, ValueFloat32:
		return 4
	case ValueUint64, ValueInt64, ValueFloat64:
		return 8
	}
	return 0
}

// minSize is the smallest number of bytes one encoded value of type v takes.
func (v ValueType) minSize() int {
	switch v {
	case ValueString:
		return 8 // length
	case ValueArray:
		return 12 // element type + count
	}
	return v.fixedSize()
}

// ValueTypeOf returns the GGUF value type that [Write] stores v as, and for
// an array the type of its elements ([ValueArray] for a []any of arrays).
// It fails for Go types that have no GGUF encoding (int, uint, maps, ...).
func ValueTypeOf(v any) (typ, elem ValueType, err error) {
	switch v.(type) {
	case uint8:
		return ValueUint8, 0, nil
	case int8:
		return ValueInt8, 0, nil
	case uint16:
		return ValueUint16, 0, nil
	case int16:
		return ValueInt16, 0, nil
	case uint32:
		return ValueUint32, 0, nil
	case int32:
		return ValueInt32, 0, nil
	case float32:
		return ValueFloat32, 0, nil
	case bool:
		return ValueBool, 0, nil
	case string:
		return ValueString, 0, nil
	case uint64:
		return ValueUint64, 0, nil
	case int64:
		return ValueInt64, 0, nil
	case float64:
		return ValueFloat64, 0, nil
	case []uint8:
		return ValueArray, ValueUint8, nil
	case []int8:
		return ValueArray, ValueInt8, nil
	case []uint16:
		return ValueArray, ValueUint16, nil
	case []int16:
		return ValueArray, ValueInt16, nil
	case []uint32:
		return ValueArray, ValueUint32, nil
	case []int32:
		return ValueArray, ValueInt32, nil
	case []float32:
		return ValueArray, ValueFloat32, nil
	case []bool:
		return ValueArray, ValueBool, nil
	case []string:
		return ValueArray, ValueString, nil
	case []uint64:
		return ValueArray, ValueUint64, nil
	case []int64:
		return ValueArray, ValueInt64, nil
	case []float64:
		return ValueArray, ValueFloat64, nil
	case []any:
		return ValueArray, ValueArray, nil
	}
	return 0, 0, fmt.Errorf("gguf: Go type %T has no GGUF metadata encoding (use a sized integer, float32/64, bool, string, a slice of those, or []any of arrays)", v)
}
