package io.strata.ops;

import io.strata.sdk.files.Locations;
import java.nio.file.Path;
import picocli.CommandLine.ITypeConverter;

/**
 * The converter of the options that name a dataset to read: a path, a {@code file://} URI, an
 * {@code hdfs://} URI or an {@code s3://} URI ({@link Locations#dataset}). Every other path option
 * takes local directories only (Main's converter): Strata never writes to HDFS or S3.
 */
final class DatasetPath implements ITypeConverter<Path> {
  @Override
  public Path convert(String value) {
    return Locations.dataset(value);
  }
}
