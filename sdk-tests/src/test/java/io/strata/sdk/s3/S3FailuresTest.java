package io.strata.sdk.s3;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import org.apache.hc.core5.http.ConnectionClosedException;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.exception.SdkClientException;

/**
 * Which failures of a read say the store is gone for now (waited out, the range asked again) and
 * which say the call was wrong: a body the store's death cut short is the former, however the
 * HTTP client words it.
 */
class S3FailuresTest {
  @Test
  void aBodyCutOffByTheStoresDeathIsTheStoreGoneNotABadRead() {
    // What S3Channel makes of HttpCore's error when S3Proxy was killed mid-answer (ClusterIT's S3 test).
    IOException cut = new ConnectionClosedException("Premature end of Content-Length delimited message body (expected: 1023663; received: 573440)");
    assertTrue(S3Bucket.gone(SdkClientException.create("reading the body of s3://b/k at 0: " + cut, cut)));
    assertTrue(S3Bucket.gone(SdkClientException.create("refused", new java.net.ConnectException("refused"))));
    assertFalse(S3Bucket.gone(SdkClientException.create("bad", new IllegalArgumentException("a malformed request"))));
  }
}
