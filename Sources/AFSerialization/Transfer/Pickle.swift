/// The transfer format between the library and Python: a strict subset of Python's pickle
/// protocol 4 (also read by protocol 5), which CPython's C unpickler and pickler read and
/// write at C speed.
///
/// The subset holds exactly what parameters and decoded documents are made of:
///
/// | Python                         | opcodes                                              |
/// | ------------------------------ | ---------------------------------------------------- |
/// | `None`, `True`, `False`        | `NONE`, `NEWTRUE`, `NEWFALSE`                        |
/// | `int`                          | `BININT1`, `BININT2`, `BININT`, `LONG1`, `LONG4`     |
/// | `float`                        | `BINFLOAT`                                           |
/// | `str`                          | `SHORT_BINUNICODE`, `BINUNICODE`, `BINUNICODE8`      |
/// | `bytes`                        | `SHORT_BINBYTES`, `BINBYTES`, `BINBYTES8`            |
/// | `dict`                         | `EMPTY_DICT`, `SETITEM`, `SETITEMS`                  |
/// | `list`                         | `EMPTY_LIST`, `APPEND`, `APPENDS`                    |
/// | `tuple`                        | `EMPTY_TUPLE`, `TUPLE1`-`TUPLE3`, `TUPLE`            |
/// | `set`, `frozenset`             | `EMPTY_SET`, `ADDITEMS`, `FROZENSET`                 |
///
/// plus the framing and bookkeeping opcodes `PROTO`, `FRAME`, `MARK`, `STOP`, `POP`,
/// `POP_MARK`, `MEMOIZE`, `BINPUT`, `LONG_BINPUT`, `BINGET`, `LONG_BINGET` (what
/// `pickle.dumps(obj, protocol=4 or 5)` writes for such objects). Every other opcode is
/// refused by `PickleReader` with an error naming it and the Python type it stands for; in
/// particular no opcode that names a class or a function (`GLOBAL`, `STACK_GLOBAL`,
/// `REDUCE`, `BUILD`, `INST`, `OBJ`, `NEWOBJ`, `NEWOBJ_EX`, `EXT1`-`EXT4`, `PERSID`) is
/// ever read or written. `PickleWriter` writes only the opcodes of the table (no memo).
public enum Pickle {
    // Opcodes (Python's `pickletools` names).
    public static let MARK: UInt8 = 0x28             // (
    public static let STOP: UInt8 = 0x2E             // .
    public static let POP: UInt8 = 0x30              // 0
    public static let POP_MARK: UInt8 = 0x31         // 1
    public static let DUP: UInt8 = 0x32              // 2
    public static let FLOAT: UInt8 = 0x46            // F
    public static let BINFLOAT: UInt8 = 0x47         // G
    public static let INT: UInt8 = 0x49              // I
    public static let BININT: UInt8 = 0x4A           // J
    public static let BININT1: UInt8 = 0x4B          // K
    public static let LONG: UInt8 = 0x4C             // L
    public static let BININT2: UInt8 = 0x4D          // M
    public static let NONE: UInt8 = 0x4E             // N
    public static let PERSID: UInt8 = 0x50           // P
    public static let BINPERSID: UInt8 = 0x51        // Q
    public static let REDUCE: UInt8 = 0x52           // R
    public static let STRING: UInt8 = 0x53           // S
    public static let BINSTRING: UInt8 = 0x54        // T
    public static let SHORT_BINSTRING: UInt8 = 0x55  // U
    public static let UNICODE: UInt8 = 0x56          // V
    public static let BINUNICODE: UInt8 = 0x58       // X
    public static let BINBYTES: UInt8 = 0x42         // B
    public static let SHORT_BINBYTES: UInt8 = 0x43   // C
    public static let EMPTY_LIST: UInt8 = 0x5D       // ]
    public static let APPEND: UInt8 = 0x61           // a
    public static let BUILD: UInt8 = 0x62            // b
    public static let GLOBAL: UInt8 = 0x63           // c
    public static let DICT: UInt8 = 0x64             // d
    public static let APPENDS: UInt8 = 0x65          // e
    public static let GET: UInt8 = 0x67              // g
    public static let BINGET: UInt8 = 0x68           // h
    public static let INST: UInt8 = 0x69             // i
    public static let LONG_BINGET: UInt8 = 0x6A      // j
    public static let LIST: UInt8 = 0x6C             // l
    public static let OBJ: UInt8 = 0x6F              // o
    public static let PUT: UInt8 = 0x70              // p
    public static let BINPUT: UInt8 = 0x71           // q
    public static let LONG_BINPUT: UInt8 = 0x72      // r
    public static let SETITEM: UInt8 = 0x73          // s
    public static let TUPLE: UInt8 = 0x74            // t
    public static let SETITEMS: UInt8 = 0x75         // u
    public static let EMPTY_DICT: UInt8 = 0x7D       // }
    public static let EMPTY_TUPLE: UInt8 = 0x29      // )
    public static let PROTO: UInt8 = 0x80
    public static let NEWOBJ: UInt8 = 0x81
    public static let EXT1: UInt8 = 0x82
    public static let EXT2: UInt8 = 0x83
    public static let EXT4: UInt8 = 0x84
    public static let TUPLE1: UInt8 = 0x85
    public static let TUPLE2: UInt8 = 0x86
    public static let TUPLE3: UInt8 = 0x87
    public static let NEWTRUE: UInt8 = 0x88
    public static let NEWFALSE: UInt8 = 0x89
    public static let LONG1: UInt8 = 0x8A
    public static let LONG4: UInt8 = 0x8B
    public static let SHORT_BINUNICODE: UInt8 = 0x8C
    public static let BINUNICODE8: UInt8 = 0x8D
    public static let BINBYTES8: UInt8 = 0x8E
    public static let EMPTY_SET: UInt8 = 0x8F
    public static let ADDITEMS: UInt8 = 0x90
    public static let FROZENSET: UInt8 = 0x91
    public static let NEWOBJ_EX: UInt8 = 0x92
    public static let STACK_GLOBAL: UInt8 = 0x93
    public static let MEMOIZE: UInt8 = 0x94
    public static let FRAME: UInt8 = 0x95
    public static let BYTEARRAY8: UInt8 = 0x96
    public static let NEXT_BUFFER: UInt8 = 0x97
    public static let READONLY_BUFFER: UInt8 = 0x98

    /// The protocol the writer declares (`PROTO 4`): every opcode of the subset exists
    /// since protocol 4, and Python 3.4+ reads it.
    public static let writtenProtocol: UInt8 = 4
    /// The one callable named and read: dates travel as
    /// `afserialization._transfer._date(seconds_since_1970)` (`STACK_GLOBAL` or `GLOBAL`,
    /// a 1-tuple of a float, `REDUCE`); the Python package's unpickler allows exactly this
    /// name, which returns a UTC `datetime.datetime`.
    public static let dateModule = "afserialization._transfer"
    public static let dateName = "_date"

    /// The `pickletools` name of an opcode and what it stands for in Python, for messages.
    public static func describe(_ op: UInt8) -> (name: String, meaning: String) {
        switch op {
        case GLOBAL: return ("GLOBAL", "a class or function named by module and name")
        case STACK_GLOBAL: return ("STACK_GLOBAL", "a class or function named by module and name")
        case REDUCE: return ("REDUCE", "an object built by calling a class or function")
        case BUILD: return ("BUILD", "an object whose state is set after it is built")
        case INST: return ("INST", "an instance of a class")
        case OBJ: return ("OBJ", "an instance of a class")
        case NEWOBJ: return ("NEWOBJ", "an instance of a class (cls.__new__)")
        case NEWOBJ_EX: return ("NEWOBJ_EX", "an instance of a class (cls.__new__ with keywords)")
        case EXT1: return ("EXT1", "a class registered with copyreg.add_extension")
        case EXT2: return ("EXT2", "a class registered with copyreg.add_extension")
        case EXT4: return ("EXT4", "a class registered with copyreg.add_extension")
        case PERSID: return ("PERSID", "a persistent id (Pickler.persistent_id)")
        case BINPERSID: return ("BINPERSID", "a persistent id (Pickler.persistent_id)")
        case BYTEARRAY8: return ("BYTEARRAY8", "a bytearray")
        case NEXT_BUFFER: return ("NEXT_BUFFER", "a pickle.PickleBuffer passed out of band")
        case READONLY_BUFFER: return ("READONLY_BUFFER", "a read-only pickle.PickleBuffer")
        case INT: return ("INT", "an int or bool in text form (protocol 0/1)")
        case LONG: return ("LONG", "an int in text form (protocol 0/1)")
        case FLOAT: return ("FLOAT", "a float in text form (protocol 0/1)")
        case STRING: return ("STRING", "a Python 2 str (protocol 0)")
        case BINSTRING: return ("BINSTRING", "a Python 2 str (protocol 1)")
        case SHORT_BINSTRING: return ("SHORT_BINSTRING", "a Python 2 str (protocol 1)")
        case UNICODE: return ("UNICODE", "a str in text form (protocol 0)")
        case DICT: return ("DICT", "a dict in protocol 0/1 form")
        case LIST: return ("LIST", "a list in protocol 0/1 form")
        case GET: return ("GET", "a memo reference in text form (protocol 0)")
        case PUT: return ("PUT", "a memo store in text form (protocol 0)")
        case DUP: return ("DUP", "a duplicated stack item")
        default: return ("0x" + hex2(op), "no pickle opcode")
        }
    }

    static func hex2(_ b: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(b >> 4)], digits[Int(b & 15)]])
    }
}
