package io.strata.sdk.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** JSON helpers over Jackson's tree model (no reflection-based binding). */
public final class Json {
  /** The shared mapper; thread-safe once configured. */
  public static final ObjectMapper MAPPER =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private static final ObjectMapper COMPACT = new ObjectMapper();

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
    JsonNode n = MAPPER.readTree(json);
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
    JsonNode n = MAPPER.readTree(text);
    if (n == null) {
      throw new IOException("empty JSON document");
    }
    return n;
  }

  public static JsonNode parse(byte[] bytes) throws IOException {
    JsonNode n = MAPPER.readTree(bytes);
    if (n == null) {
      throw new IOException("empty JSON document");
    }
    return n;
  }
}
