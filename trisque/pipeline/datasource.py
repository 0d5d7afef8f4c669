"""TrisqueDataSource, the ``trisque`` format: picks the reader or writer
for what Spark asks, after checking options and columns on the driver."""

from __future__ import annotations

from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader,
                                    DataSourceStreamWriter, DataSourceWriter)
from pyspark.sql.types import BinaryType, StringType, StructType

from .ack_writer import AckWriter, check_ack_schema
from .batch_source import BatchReader
from .bodies import check_sink_schema
from .job_rows import SOURCE_SCHEMA
from .nodes import check_reachable, parse_nodes
from .options import OptionError, SinkOptions, SourceOptions
from .sink import BatchSink, StreamSink
from .stream_source import StreamReader

SOURCE_COLUMNS = ["queue", "id", "body", "nacks", "additional_deliveries", "ctime"]
PLANNING_TIMEOUT_S = 5.0


def body_is_binary(schema: StructType) -> bool:
    """A user schema may only make ``body`` binary."""
    if [f.name for f in schema.fields] != SOURCE_COLUMNS:
        raise OptionError(f"schema: a trisque source has the columns {SOURCE_COLUMNS}")
    body = schema["body"].dataType
    if not isinstance(body, (StringType, BinaryType)):
        raise OptionError("schema: column 'body' must be string or binary")
    return isinstance(body, BinaryType)


class TrisqueDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "trisque"

    def schema(self) -> str:
        return SOURCE_SCHEMA

    def _sink_options(self, schema: StructType, overwrite: bool) -> SinkOptions:
        if overwrite:
            raise OptionError("mode 'overwrite' is not supported: jobs are appended")
        options = SinkOptions.parse(self.options)
        if options.ack:
            check_ack_schema(schema)
        else:
            check_sink_schema(schema, options)
        check_reachable(parse_nodes(options.nodes), PLANNING_TIMEOUT_S)
        return options

    def _source_options(self) -> SourceOptions:
        options = SourceOptions.parse(self.options)
        check_reachable(parse_nodes(options.nodes), PLANNING_TIMEOUT_S)
        return options

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        options = self._sink_options(schema, overwrite)
        return AckWriter(options) if options.ack else BatchSink(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = self._sink_options(schema, overwrite)
        if options.ack:
            raise OptionError("option 'ack' is for batch writes (a stream acks by itself)")
        return StreamSink(options)  # type: ignore[return-value]

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(self._source_options(), body_is_binary(schema))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(self._source_options(), body_is_binary(schema))
