// Reads Arrow IPC files with the apache-arrow package (an implementation independent of
// Strata's) and prints, per file, one JSON line: schema metadata and every value of every
// column. Exact encodings are used where JSON numbers would lose precision: 64-bit integers
// and timestamps as decimal strings, decimals as unscaled decimal strings, binaries as hex.
import { readFileSync } from 'node:fs';
import { tableFromIPC, Type } from 'apache-arrow';

function hex(bytes) {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

function decimalAt(data, index) {
  const words = data.values; // Uint32Array, 4 words per value, little-endian
  const at = (data.offset + index) * 4;
  let v = 0n;
  for (let k = 3; k >= 0; k--) v = (v << 32n) | BigInt(words[at + k]);
  if (v >= (1n << 127n)) v -= (1n << 128n);
  return v.toString();
}

function scalar(type, value) {
  switch (type.typeId) {
    case Type.Int:
      return type.bitWidth === 64 ? BigInt(value).toString() : Number(value);
    case Type.Float:
      return Number.isFinite(value) ? value : String(value);
    case Type.Bool:
      return Boolean(value);
    case Type.Utf8:
      return value;
    case Type.Binary:
      return hex(value);
    case Type.Date:
      return value instanceof Date ? value.getTime() : Number(value);
    default:
      return String(value);
  }
}

function columnValues(vector) {
  const out = [];
  const type = vector.type;
  let row = 0;
  for (const data of vector.data) {
    for (let i = 0; i < data.length; i++, row++) {
      if (!vector.isValid(row)) { out.push(null); continue; }
      switch (type.typeId) {
        case Type.Timestamp:
          out.push(BigInt(data.values[data.offset + i]).toString());
          break;
        case Type.Decimal:
          out.push(decimalAt(data, i));
          break;
        case Type.List: {
          const items = vector.get(row);
          const list = [];
          for (let j = 0; j < items.length; j++) {
            list.push(items.isValid(j) ? scalar(type.children[0].type, items.get(j)) : null);
          }
          out.push(list);
          break;
        }
        default:
          out.push(scalar(type, vector.get(row)));
      }
    }
  }
  return out;
}

for (const file of process.argv.slice(2)) {
  const table = tableFromIPC(readFileSync(file));
  const columns = {};
  for (const field of table.schema.fields) {
    const vector = table.getChild(field.name);
    columns[field.name] = { type: String(field.type), nulls: vector.nullCount, values: columnValues(vector) };
  }
  const metadata = Object.fromEntries(table.schema.metadata);
  console.log(JSON.stringify({ file, rows: table.numRows, metadata, columns }));
}
