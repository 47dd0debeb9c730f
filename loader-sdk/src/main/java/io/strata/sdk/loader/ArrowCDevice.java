package io.strata.sdk.loader;

/**
 * A batch exported through the Arrow C Device Data Interface: the addresses of its {@code
 * ArrowDeviceArray} (a struct array with one child per feature, {@code device_type} and {@code
 * device_id} saying where the buffers are, {@code sync_event} what to wait on before reading) and
 * of its {@code ArrowSchema}. The consumer calls each struct's release callback when done; the
 * layout is in docs/FORMAT.md ("Arrow C Device export").
 *
 * @param deviceArray address of the {@code struct ArrowDeviceArray}
 * @param schema address of the {@code struct ArrowSchema}
 */
public record ArrowCDevice(long deviceArray, long schema) {}
