package cdcgen.delta;

import io.delta.storage.HadoopFileSystemLogStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.util.Iterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Delta's log store for S3 through S3A, committing with a conditional PUT.
 *
 * <p>A Delta commit is the creation of {@code _delta_log/<version>.json} if, and only if,
 * no writer created it first. Delta's own store for {@code s3a://} checks for the file and
 * then writes it unconditionally, under a lock held only inside one JVM: two drivers may
 * both write the same version and the second silently replaces the first. S3 (and the
 * S3-compatible stores that follow it) now honours {@code If-None-Match: *}; Hadoop 3.4's
 * S3A sends it for a file created through the builder with {@code overwrite(false)} and
 * the per-file option {@code fs.s3a.create.performance}. The store answers a lost race
 * with HTTP 412, which S3A raises on {@code close()}; this store turns it into the
 * {@link FileAlreadyExistsException} Delta expects from a taken version, so Delta checks
 * the winner's commit for conflicts and retries at the next version or fails the write,
 * and no commit is ever overwritten. Any other failure propagates unchanged.
 *
 * <p>Reading and listing are Hadoop's ({@link HadoopFileSystemLogStore}): S3's listings
 * are strongly consistent. A PUT is atomic, so a partial commit is never visible.
 */
public class ConditionalPutLogStore extends HadoopFileSystemLogStore {
  /** S3A's per-file option that makes a non-overwriting create a conditional PUT. */
  static final String CONDITIONAL_CREATE = "fs.s3a.create.performance";

  public ConditionalPutLogStore(Configuration hadoopConf) {
    super(hadoopConf);
  }

  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration conf)
      throws IOException {
    FileSystem fs = path.getFileSystem(conf);
    try {
      FSDataOutputStream stream =
          overwrite
              ? fs.create(path, true)
              : (FSDataOutputStream)
                  fs.createFile(path).overwrite(false).must(CONDITIONAL_CREATE, true).build();
      try {
        while (actions.hasNext()) {
          stream.write((actions.next() + "\n").getBytes(StandardCharsets.UTF_8));
        }
      } finally {
        stream.close();
      }
    } catch (org.apache.hadoop.fs.FileAlreadyExistsException e) {
      throw alreadyThere(path, e);
    } catch (IOException e) {
      if (!overwrite && isPreconditionFailure(e)) {
        throw alreadyThere(path, e);
      }
      throw e;
    }
  }

  @Override
  public Boolean isPartialWriteVisible(Path path, Configuration conf) {
    return false;
  }

  private static FileAlreadyExistsException alreadyThere(Path path, IOException cause) {
    FileAlreadyExistsException taken = new FileAlreadyExistsException(path.toString());
    taken.initCause(cause);
    return taken;
  }

  /** S3A's RemoteFileChangedException for HTTP 412, named so no S3A class is loaded here. */
  private static boolean isPreconditionFailure(Throwable error) {
    for (Throwable e = error; e != null; e = e.getCause()) {
      String message = String.valueOf(e.getMessage());
      if (message.contains("PreconditionFailed") || message.contains("Status Code: 412")) {
        return true;
      }
    }
    return false;
  }
}
