package io.strata.sdk.format;

import java.util.Set;

/** Constants of the Arrow IPC format (Schema.fbs, Message.fbs, File.fbs) that Strata uses. */
final class Arrow {
  private Arrow() {}

  static final byte[] MAGIC = {'A', 'R', 'R', 'O', 'W', '1'};
  static final int CONTINUATION = 0xFFFFFFFF;
  static final short METADATA_V5 = 4;

  // MessageHeader union
  static final int HEADER_SCHEMA = 1;
  static final int HEADER_RECORD_BATCH = 3;

  // Type union
  static final int TYPE_INT = 2;
  static final int TYPE_FLOATING_POINT = 3;
  static final int TYPE_BINARY = 4;
  static final int TYPE_UTF8 = 5;
  static final int TYPE_BOOL = 6;
  static final int TYPE_DECIMAL = 7;
  static final int TYPE_DATE = 8;
  static final int TYPE_TIMESTAMP = 10;
  static final int TYPE_LIST = 12;

  static final int PRECISION_SINGLE = 1;
  static final int PRECISION_DOUBLE = 2;
  static final int DATE_DAY = 0;
  static final int TIME_NANOSECOND = 3;

  // Table slots
  static final int MESSAGE_VERSION = 0;
  static final int MESSAGE_HEADER_TYPE = 1;
  static final int MESSAGE_HEADER = 2;
  static final int MESSAGE_BODY_LENGTH = 3;

  static final int SCHEMA_ENDIANNESS = 0;
  static final int SCHEMA_FIELDS = 1;
  static final int SCHEMA_METADATA = 2;

  static final int FIELD_NAME = 0;
  static final int FIELD_NULLABLE = 1;
  static final int FIELD_TYPE_TYPE = 2;
  static final int FIELD_TYPE = 3;
  static final int FIELD_CHILDREN = 5;

  static final int KV_KEY = 0;
  static final int KV_VALUE = 1;

  static final int BATCH_LENGTH = 0;
  static final int BATCH_NODES = 1;
  static final int BATCH_BUFFERS = 2;
  static final int BATCH_COMPRESSION = 3;

  static final int FOOTER_VERSION = 0;
  static final int FOOTER_SCHEMA = 1;
  static final int FOOTER_DICTIONARIES = 2;
  static final int FOOTER_RECORD_BATCHES = 3;

  static final int BLOCK_SIZE = 24;
  static final int FIELD_NODE_SIZE = 16;
  static final int BUFFER_SIZE = 16;

  /** Alignment of the record batch body and of every buffer in it. */
  static final int BUFFER_ALIGNMENT = 64;

  // Strata's keys in the schema's custom metadata.
  static final String KEY_FORMAT = "strata.format";
  static final String FORMAT_NAME = "strata-segment";
  static final String KEY_VERSION = "strata.format.version";
  static final String FORMAT_VERSION = "1";
  static final String KEY_DATASET = "strata.dataset";
  static final String KEY_DATASET_VERSION = "strata.dataset.version";
  static final String KEY_CHUNK = "strata.chunk";
  static final String KEY_ROW_START = "strata.rows.start";
  static final String KEY_ROW_END = "strata.rows.end";
  static final String KEY_COLUMNS = "strata.columns";
  static final String KEY_CRC = "strata.crc32c";
  static final Set<String> RESERVED_KEYS =
      Set.of(KEY_FORMAT, KEY_VERSION, KEY_DATASET, KEY_DATASET_VERSION, KEY_CHUNK, KEY_ROW_START,
          KEY_ROW_END, KEY_COLUMNS, KEY_CRC);
}
