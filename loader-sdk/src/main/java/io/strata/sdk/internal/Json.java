package io.strata.sdk.internal;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * JSON helpers over Jackson's tree model (no reflection-based binding). Reading is strict: one
 * standard JSON value (no comments, NaN, single quotes or trailing text), no key twice in an
 * object; a document that breaks a rule is an {@link IOException} whose message says which, where,
 * in words of its own (never the parser's class or feature names).
 */
public final class Json {
  /** The shared mapper; thread-safe once configured. */
  public static final ObjectMapper MAPPER =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private static final ObjectMapper COMPACT = new ObjectMapper();

  /** The strict reader every parse goes through. */
  private static final ObjectReader STRICT = MAPPER.reader()
      .with(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .with(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

  private Json() {}

  public static ObjectNode object() {
    return MAPPER.createObjectNode();
  }

  public static ArrayNode array() {
    return MAPPER.createArrayNode();
  }

  /** Compact one-line JSON. */
  public static String compact(JsonNode node) {
    try {
      return COMPACT.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Indented JSON. */
  public static String pretty(JsonNode node) {
    try {
      return MAPPER.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  public static String stringArray(List<String> values) {
    ArrayNode a = array();
    values.forEach(a::add);
    return compact(a);
  }

  /** Reads a JSON array of strings. */
  public static List<String> parseStringArray(String json) throws IOException {
    JsonNode n = parse(json);
    if (n == null || !n.isArray()) {
      throw new IOException("expected a JSON array of strings, got: " + json);
    }
    List<String> out = new ArrayList<>();
    for (JsonNode e : n) {
      if (!e.isTextual()) {
        throw new IOException("expected a JSON array of strings, got: " + json);
      }
      out.add(e.asText());
    }
    return out;
  }

  /** Parses JSON text into a tree. */
  public static JsonNode parse(String text) throws IOException {
    return parse(text.getBytes(StandardCharsets.UTF_8));
  }

  /** Parses JSON bytes (UTF-8) into a tree, as {@link #parse(String)}. */
  public static JsonNode parse(byte[] bytes) throws IOException {
    JsonNode n;
    try {
      n = STRICT.readTree(bytes);
    } catch (JsonProcessingException e) {
      throw new IOException(describe(e));
    }
    if (n == null || n.isMissingNode()) {
      throw new IOException("empty JSON document");
    }
    return n;
  }

  /** What is wrong with a document the parser refused, and where, without the parser's own vocabulary. */
  static String describe(JsonProcessingException e) {
    String m = String.valueOf(e.getOriginalMessage());
    String what;
    if (e instanceof StreamConstraintsException) {
      what = m.contains("nesting depth") ? "nested deeper than " + com.fasterxml.jackson.core.StreamReadConstraints.DEFAULT_MAX_DEPTH + " levels"
          : m.contains("Number") ? "a number is too long"
          : m.contains("String") ? "a string is too long"
          : m.contains("Name") ? "a key is too long"
          : "the document exceeds a size limit";
    } else if (m.startsWith("Duplicate field")) {
      int q = m.indexOf('\'');
      int r = m.lastIndexOf('\'');
      what = "duplicate key" + (q >= 0 && r > q ? " " + clip(m.substring(q, r + 1)) : "") + " (each key once per object)";
    } else if (m.startsWith("Trailing token")) {
      what = "unexpected text after the JSON value";
    } else if (m.contains("Non-standard token") || m.contains("ALLOW_") || m.contains("was expecting double-quote")
        || m.contains("comments")) {
      what = "not standard JSON (NaN, Infinity, comments, single quotes and unquoted keys are refused)";
    } else if (m.contains("end-of-input") || m.contains("Unexpected end")) {
      what = "the document ends before its value does";
    } else if (m.contains("Invalid UTF-8") || m.contains("Invalid UTF")) {
      what = "not valid UTF-8";
    } else if (m.contains("control character") || m.contains("CTRL-CHAR")) {
      what = "an unescaped control character in a string";
    } else if (m.contains("character escape")) {
      what = "an invalid escape in a string";
    } else if (m.contains("Unrecognized token") || m.contains("Unexpected character")) {
      what = "unexpected character";
    } else {
      what = "malformed JSON";
    }
    JsonLocation at = e.getLocation();
    return (what.startsWith("malformed") ? what : "malformed JSON: " + what)
        + (at == null || at.getLineNr() < 1 ? "" : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")");
  }

  private static String clip(String s) {
    return s.length() > 60 ? s.substring(0, 60) + "...'" : s;
  }
}
