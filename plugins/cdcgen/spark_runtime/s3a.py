"""Delta tables on S3 (``s3a://``): the S3A connector's jars and the session conf reaching a store.

PySpark's Hadoop (``hadoop-client-api``/``-runtime`` 3.4.2) has no S3 filesystem; that is
``hadoop-aws``, which calls the AWS SDK for Java v2. Its jars go where Delta's go, into
PySpark's ``jars/`` (``python -m cdcgen.spark_runtime.install`` installs every set), checked
against the SHA-256 pinned here, for the reasons given there: ``spark.jars.packages``
would resolve with Ivy on every session start and drag in the SDK's whole dependency
tree.

Why not the SDK's ``bundle`` jar, the dependency ``hadoop-aws`` declares: it is 600 MB
of every AWS service, shaded. S3A needs about 25 small modules of the same SDK version
(2.29.52, the one Hadoop 3.4.2 is built and tested with), 9 MB in all with
``hadoop-aws``; their third-party needs (Jackson core shaded in
``third-party-jackson-core``, Apache HttpClient, SLF4J) are in Hadoop's shaded runtime
or in Spark's ``jars/``. ``reactive-streams`` is the SDK's async API. The list was
checked by running Delta writes and reads against an S3-compatible server. Left out on
purpose: ``netty-nio-client`` (S3A's async client, built lazily: not needed by
reads, writes or ``rename``, which Delta uses for its ``.crc`` files and which worked in
that run), the analytics accelerator (``fs.s3a.input.stream.type=analytics`` only) and
client-side encryption.

:func:`s3a_conf` is the conf reaching a store, AWS or an S3-compatible endpoint, with
credentials from the environment only, and Delta's commits there through the lake's own
log store (:mod:`cdcgen.spark_runtime.log_store`): its docstring says why no S3A setting makes
Delta's default store's commits put-if-absent.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from cdcgen.spark_runtime.delta import Jar
from cdcgen.spark_runtime.log_store import LOG_STORE_CLASS

HADOOP_VERSION = "3.4.2"
"""PySpark 4.1's Hadoop client: ``hadoop-aws`` must be exactly this version."""
AWS_SDK_VERSION = "2.29.52"
"""The AWS SDK v2 that Hadoop 3.4.2 is built against (``aws-java-sdk-v2.version``)."""

_SDK = "software.amazon.awssdk"

_SDK_MODULES = {
    "s3": "abaedea7e68063e9c4ab090f80d14b9884c57b50953bfe6e5acaa23025609efa",
    "sdk-core": "ea8e9856569f85075a8a806d0481c4bd848c98b24fd6d706fc0b5883fc4604dc",
    "regions": "5ee0e26277c679ffa70d83923b0d5f77a53066ecde8610f28be1856947d60eaf",
    "third-party-jackson-core": "eaece3eb60beb8ec09d8a4f48d5bff4110010b03cc23688bdcf2af2eb075cac6",
    "s3-transfer-manager": "0c9e654637247187a7e2494eb7a8799477a772a7d554cd3ae787cd3e3bae3c55",
    "auth": "4d8143b6198dc7a530c2ccdd813129c132b96736086c0d4fea85480b9bdbc5fe",
    "utils": "f150a38f2fec14ced2de6459bfe804f647c88baa573b218646ef89b436a29d42",
    "aws-core": "eb560c064fbaac7e2e7f4a77ac343d3083bea0d7f6e2c69ba022d3f3e859be90",
    "http-auth-aws": "7ae124e81ac0c2860bb61fdde34a388dbe823fef8509dd46a6bec805ada90308",
    "aws-xml-protocol": "daf87b429373ad586d165003b5b1d4fe498c6472eb65ec9a9e2aa7d56f3917dd",
    "http-client-spi": "8ea61ce3b527779fbfe119e0775c4b7cfdf274a979b1e50596a634685a5b6542",
    "apache-client": "c96494be30ecac6f0ab7a35fdd91a4c77ca8a5daf62f3d9d84644ef0f0524dc6",
    "aws-query-protocol": "1b117672963ee5059c45f2aadb110f191b578d108d8f08d7c7a59e6c0b098a8e",
    "checksums": "bca99ff25c9b917d6be03e5dce78ad5328e7dca485e96024fa8476e4192a800a",
    "retries": "ca3752ba31399721980c6398992921ff5aa164e084b4c14484333df58c76a353",
    "profiles": "fef84619d101838ba45f48d0caddb09a85d9ed8bf869095bd7d2064796856cf7",
    "http-auth-spi": "7a2168c5a7baa856d7ae9f9c4f7522d2db9f1361108c38f5b6ece66f249e6a2d",
    "protocol-core": "7b32e41a3743b422d2edec1670f60b4c1e512fcd5ab7a53fef20742d6b9104d1",
    "json-utils": "2652cdb3668311bcff6e643c8612b9fea266423ae1ce33743c84dd7f77904311",
    "retries-spi": "a4218ea742fc9e07a620629d7a258bfd92b8ea3ef75f1b99193d0898ca3efe99",
    "identity-spi": "85104635abf9e5c044aaf7f8951b63efc2ef82051b5ee303571ee2e1fd8b46d0",
    "metrics-spi": "1db2e3da338148ee40a716e1733c9a5b99e9e6daa4db3aa8bd7e718adafa2510",
    "http-auth": "d8aa3bd376aaec7196396e65fe8755f1fdd169e51357f8128ecdc7d23a687450",
    "arns": "f5a4d1d9b4e4fc63c9bda49bcf1c59d23fd876b276c6b43aaca12969337303a6",
    "endpoints-spi": "e54f246c668d70b55cffe0c8fad18d4465e74e22db75139918bd30610093d1e6",
    "checksums-spi": "21193b9b648843dcaff493f0dd80abab9ee6871b203b9218120554698d8f7b8a",
}
"""The SDK modules S3A loads, with the SHA-256 of each ``<module>-2.29.52.jar``."""

JARS = (
    Jar(
        "org.apache.hadoop",
        "hadoop-aws",
        HADOOP_VERSION,
        "d2d24e6b715b5656b9d238bf13b6682a07e2004dd36aad74a73aeb854319f4d9",
    ),
    *(Jar(_SDK, module, AWS_SDK_VERSION, sha256) for module, sha256 in _SDK_MODULES.items()),
    Jar(
        "org.reactivestreams",
        "reactive-streams",
        "1.0.4",
        "f75ca597789b3dac58f61857b9ac2e1034a68fa672db35055a8fb4509e325f28",
    ),
)
"""S3A for PySpark's Hadoop 3.4.2: ``hadoop-aws`` and the AWS SDK v2 modules it calls."""

ENV_CREDENTIALS = "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider"
"""The SDK's provider of ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``."""

_S3A = "spark.hadoop.fs.s3a."


def s3a_conf(endpoint_url: str | None, region: str | None) -> dict[str, str]:
    """Spark conf for ``s3a://`` paths on AWS (no ``endpoint_url``) or an S3-compatible store.

    Credentials: only the name of the SDK's environment-variable provider is in the
    conf. The access key, secret and session token stay in the process environment
    (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``), which
    the driver's JVM and local executors inherit; they never appear in Spark's conf,
    its event log or a ``spark-submit`` command line. Executors on other hosts need
    the same variables in their own environment.

    Put-if-absent: not for Delta's commits, whatever the conf (checked against a store
    honouring ``If-None-Match``). Delta's log store for ``s3a://``
    (``S3SingleDriverLogStore``) writes commit N with the plain
    ``FileSystem.create(path, overwrite=false)`` after its own ``exists`` check, under a
    lock held only within its JVM. Hadoop 3.4.2's S3A sends the PUT with
    ``If-None-Match: *`` only when ``innerCreateFile`` gets options with no OVERWRITE
    flag and ``isPerformance`` (and ``create.conditional.enabled``, true by default).
    The builder calls give it that (``createFile(p).overwrite(false)`` or
    ``createNonRecursive(p, {CREATE}, ...)`` with ``fs.s3a.create.performance`` on, per
    filesystem or as a ``must`` option): a losing writer's ``close()`` raises
    ``RemoteFileChangedException`` (HTTP 412, PreconditionFailed) and the first object
    stays. The plain ``create(path, overwrite)`` doesn't. With ``create.performance``
    it takes the fixed CREATE|OVERWRITE options, dropping the caller's
    ``overwrite=false``: an unconditional PUT with no probe, a silent overwrite. Without
    it, S3A checks with HEAD and LIST (``FileAlreadyExistsException`` if the object is
    there), then does an unconditional PUT. So ``create.performance`` stays off here
    (stated, since ``fs.s3a.performance.flags`` could turn it on): it would only take
    away the overwrite check from every ``create(path, false)``. Two writers that both
    pass the checks before either PUT still both write commit N, and the last one
    wins. Delta reports a commit it finds already written as a conflict
    (``ConcurrentAppendException`` etc.) or retries it at N+1, but a race inside the
    check-then-PUT window goes unseen. So ``s3a://`` tables get the lake's own log store
    (:data:`~cdcgen.spark_runtime.log_store.LOG_STORE_CLASS`), which commits through the builder
    and turns the 412 into the ``java.nio.file.FileAlreadyExistsException`` Delta
    expects from a version already taken (Delta ships no such store).

    With a custom endpoint: path-style requests (no bucket subdomains, so loopback and
    plain host names work), TLS per the URL's scheme. The region given is the signing
    region (``endpoint.region``); without one S3A infers it, from the endpoint or the
    SDK's chain. S3A's default of no bucket-existence probe at start
    (``bucket.probe=0``) is stated, since a probe costs a request per filesystem.
    """
    conf = {
        "spark.delta.logStore.s3a.impl": LOG_STORE_CLASS,
        _S3A + "aws.credentials.provider": ENV_CREDENTIALS,
        # If-None-Match: * for builder creates without overwrite (see above); the
        # plain create(path, false) keeps its existence check, performance off.
        _S3A + "create.conditional.enabled": "true",
        _S3A + "create.performance": "false",
        _S3A + "bucket.probe": "0",
    }
    if region:
        conf[_S3A + "endpoint.region"] = region
    if endpoint_url:
        scheme = urlsplit(endpoint_url).scheme.lower()
        if scheme not in ("http", "https"):
            raise ValueError(f"endpoint {endpoint_url!r}: expected an http:// or https:// URL")
        conf[_S3A + "endpoint"] = endpoint_url
        conf[_S3A + "path.style.access"] = "true"
        conf[_S3A + "connection.ssl.enabled"] = str(scheme == "https").lower()
    return conf
