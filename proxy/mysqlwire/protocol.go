package mysqlwire

// Capability flags (Protocol::CapabilityFlags).
const (
	clientLongPassword     uint32 = 1 << 0
	clientFoundRows        uint32 = 1 << 1
	clientLongFlag         uint32 = 1 << 2
	clientConnectWithDB    uint32 = 1 << 3
	clientNoSchema         uint32 = 1 << 4
	clientODBC             uint32 = 1 << 6
	clientIgnoreSpace      uint32 = 1 << 8
	clientProtocol41       uint32 = 1 << 9
	clientInteractive      uint32 = 1 << 10
	clientSSL              uint32 = 1 << 11
	clientTransactions     uint32 = 1 << 13
	clientSecureConnection uint32 = 1 << 15
	clientMultiStatements  uint32 = 1 << 16
	clientMultiResults     uint32 = 1 << 17
	clientPSMultiResults   uint32 = 1 << 18
	clientPluginAuth       uint32 = 1 << 19
	clientConnectAttrs     uint32 = 1 << 20
	clientPluginAuthLenenc uint32 = 1 << 21
	clientDeprecateEOF     uint32 = 1 << 24
)

// serverCapabilities are what dpproxy offers (clientSSL is added when a
// TLS configuration is set). Multi-results is offered because clients
// require it for prepared statements; dpproxy sends one result per query.
const serverCapabilities = clientLongPassword | clientFoundRows | clientLongFlag | clientConnectWithDB |
	clientNoSchema | clientODBC | clientIgnoreSpace | clientProtocol41 | clientInteractive |
	clientTransactions | clientSecureConnection | clientMultiResults | clientPSMultiResults |
	clientPluginAuth | clientConnectAttrs | clientPluginAuthLenenc | clientDeprecateEOF

// Server status flags.
const (
	statusInTrans    uint16 = 0x0001
	statusAutocommit uint16 = 0x0002
)

// Commands.
const (
	comSleep            = 0x00
	comQuit             = 0x01
	comInitDB           = 0x02
	comQuery            = 0x03
	comFieldList        = 0x04
	comStatistics       = 0x09
	comPing             = 0x0e
	comStmtPrepare      = 0x16
	comStmtExecute      = 0x17
	comStmtSendLongData = 0x18
	comStmtClose        = 0x19
	comStmtReset        = 0x1a
	comSetOption        = 0x1b
	comResetConnection  = 0x1f
)

// Column types (enum_field_types).
const (
	typeDecimal    byte = 0x00
	typeTiny       byte = 0x01
	typeShort      byte = 0x02
	typeLong       byte = 0x03
	typeFloat      byte = 0x04
	typeDouble     byte = 0x05
	typeNull       byte = 0x06
	typeTimestamp  byte = 0x07
	typeLongLong   byte = 0x08
	typeInt24      byte = 0x09
	typeDate       byte = 0x0a
	typeTime       byte = 0x0b
	typeDatetime   byte = 0x0c
	typeYear       byte = 0x0d
	typeNewDate    byte = 0x0e
	typeVarchar    byte = 0x0f
	typeBit        byte = 0x10
	typeJSON       byte = 0xf5
	typeNewDecimal byte = 0xf6
	typeEnum       byte = 0xf7
	typeSet        byte = 0xf8
	typeTinyBlob   byte = 0xf9
	typeMediumBlob byte = 0xfa
	typeLongBlob   byte = 0xfb
	typeBlob       byte = 0xfc
	typeVarString  byte = 0xfd
	typeString     byte = 0xfe
	typeGeometry   byte = 0xff
)

// Column flags.
const (
	flagNotNull  uint16 = 1
	flagBlob     uint16 = 16
	flagUnsigned uint16 = 32
	flagBinary   uint16 = 128
	flagNum      uint16 = 32768
)

// Character sets (collation ids).
const (
	charsetBinary  uint16 = 63
	charsetUTF8MB4 uint16 = 45 // utf8mb4_general_ci, known to MySQL and MariaDB clients
)

// Authentication plugins.
const (
	pluginNative = "mysql_native_password"
	pluginSHA2   = "caching_sha2_password"
)

// caching_sha2_password AuthMoreData codes.
const (
	sha2FastAuthSuccess = 0x03
)
