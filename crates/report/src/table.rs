//! [`Table`]: named, typed columns built from serde rows (one struct per row,
//! as CSV files are written) or from a JSON document flattened into one row,
//! and written as Apache Parquet (one row group, uncompressed, every column
//! optional so a missing value is a null) for pandas, polars, DuckDB or Spark.

use crate::ReportError;
use parquet::basic::{LogicalType, Repetition, Type as PhysicalType};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DataType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use parquet::schema::types::Type;
use serde::Serialize;
use serde_json::Value;
use std::io::Write;
use std::sync::Arc;

/// One column's values; `None` is a null.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Text(Vec<Option<String>>),
    Bool(Vec<Option<bool>>),
}

impl Column {
    fn len(&self) -> usize {
        match self {
            Self::Int(values) => values.len(),
            Self::Float(values) => values.len(),
            Self::Text(values) => values.len(),
            Self::Bool(values) => values.len(),
        }
    }
}

/// Columns of equal length, in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    pub columns: Vec<(String, Column)>,
}

impl Table {
    /// One row per element of `rows` (structs of scalar fields, as for
    /// CSV), columns named and ordered by the first row's fields. A column
    /// holding integers and floats becomes floats; other mixes are an error
    /// naming the column.
    pub fn from_rows<R: Serialize>(rows: &[R]) -> Result<Self, ReportError> {
        let objects = rows
            .iter()
            .map(|row| match serde_json::to_value(row) {
                Ok(Value::Object(fields)) => Ok(fields.into_iter().collect::<Vec<_>>()),
                Ok(_) => Err(invalid("", "a row is not a struct")),
                Err(cause) => Err(invalid("", &cause.to_string())),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_objects(&objects)
    }

    /// `document` as one row: nested objects flattened into `outer.inner`
    /// columns; arrays (series, histograms) left out, they are tables of
    /// their own.
    pub fn from_document(document: &Value) -> Result<Self, ReportError> {
        let mut fields = Vec::new();
        flatten("", document, &mut fields);
        Self::from_objects(&[fields])
    }

    /// Rows in columns; `(name, value)` pairs per row.
    fn from_objects(rows: &[Vec<(String, Value)>]) -> Result<Self, ReportError> {
        let Some(first) = rows.first() else {
            return Ok(Self::default());
        };
        let names: Vec<&String> = first.iter().map(|(name, _)| name).collect();
        let mut columns = Vec::with_capacity(names.len());
        for name in names {
            let values: Vec<&Value> = rows
                .iter()
                .map(|row| row.iter().find(|(field, _)| field == name).map_or(&Value::Null, |(_, value)| value))
                .collect();
            columns.push((name.clone(), column(name, &values)?));
        }
        Ok(Self { columns })
    }

    /// The number of rows.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, column)| column.len())
    }

    /// Writes the table as a Parquet file to `out` (`name` labels errors).
    pub fn write_parquet<W: Write + Send>(&self, out: W, name: &str) -> Result<(), ReportError> {
        let error = |cause: parquet::errors::ParquetError| invalid(name, &cause.to_string());
        let fields = self
            .columns
            .iter()
            .map(|(column_name, column)| schema_field(column_name, column).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()
            .map_err(error)?;
        let schema = Type::group_type_builder("nandlab").with_fields(fields).build().map_err(error)?;
        let properties = Arc::new(WriterProperties::builder().set_created_by("nandlab".to_owned()).build());
        let mut writer = SerializedFileWriter::new(out, Arc::new(schema), properties).map_err(error)?;
        let mut group = writer.next_row_group().map_err(error)?;
        let mut columns = self.columns.iter();
        while let Some(mut writer) = group.next_column().map_err(error)? {
            let Some((_, column)) = columns.next() else {
                return Err(invalid(name, "the schema has more columns than the table"));
            };
            match column {
                Column::Int(values) => write_column::<Int64Type>(&mut writer, values),
                Column::Float(values) => write_column::<DoubleType>(&mut writer, values),
                Column::Text(values) => {
                    let bytes: Vec<Option<ByteArray>> =
                        values.iter().map(|text| text.as_deref().map(ByteArray::from)).collect();
                    write_column::<ByteArrayType>(&mut writer, &bytes)
                }
                Column::Bool(values) => write_column::<BoolType>(&mut writer, values),
            }
            .map_err(error)?;
            writer.close().map_err(error)?;
        }
        group.close().map_err(error)?;
        writer.close().map_err(error)?;
        Ok(())
    }
}

/// Writes one optional column: the present values, and a definition level
/// per row (1 present, 0 null).
fn write_column<T: DataType>(
    writer: &mut SerializedColumnWriter<'_>,
    values: &[Option<T::T>],
) -> parquet::errors::Result<usize> {
    let present: Vec<T::T> = values.iter().flatten().cloned().collect();
    let levels: Vec<i16> = values.iter().map(|value| i16::from(value.is_some())).collect();
    writer.typed::<T>().write_batch(&present, Some(&levels), None)
}

fn invalid(name: &str, reason: &str) -> ReportError {
    ReportError::Table { name: name.to_owned(), reason: reason.to_owned() }
}

fn flatten(prefix: &str, value: &Value, fields: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object {
                let name = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
                flatten(&name, inner, fields);
            }
        }
        Value::Array(_) => {}
        scalar => fields.push((prefix.to_owned(), scalar.clone())),
    }
}

/// The column of `values`: integers while every number is an integer that
/// fits an i64, else floats; text; booleans; all nulls become a float column.
fn column(name: &str, values: &[&Value]) -> Result<Column, ReportError> {
    let kinds: Vec<&Value> = values.iter().copied().filter(|value| !value.is_null()).collect();
    let mixed = |expected: &str| invalid(name, &format!("column {name:?} mixes {expected} with other values"));
    Ok(match kinds.first() {
        Some(Value::String(_)) => Column::Text(
            values
                .iter()
                .map(|value| match value {
                    Value::Null => Ok(None),
                    Value::String(text) => Ok(Some(text.clone())),
                    _ => Err(mixed("text")),
                })
                .collect::<Result<_, _>>()?,
        ),
        Some(Value::Bool(_)) => Column::Bool(
            values
                .iter()
                .map(|value| match value {
                    Value::Null => Ok(None),
                    Value::Bool(flag) => Ok(Some(*flag)),
                    _ => Err(mixed("booleans")),
                })
                .collect::<Result<_, _>>()?,
        ),
        _ if kinds.iter().all(|value| value.as_i64().is_some()) && !kinds.is_empty() => {
            Column::Int(values.iter().map(|value| value.as_i64()).collect())
        }
        _ => Column::Float(
            values
                .iter()
                .map(|value| match value {
                    Value::Null => Ok(None),
                    Value::Number(number) => Ok(number.as_f64()),
                    _ => Err(mixed("numbers")),
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

fn schema_field(name: &str, column: &Column) -> parquet::errors::Result<Type> {
    let (physical, logical) = match column {
        Column::Int(_) => (PhysicalType::INT64, None),
        Column::Float(_) => (PhysicalType::DOUBLE, None),
        Column::Text(_) => (PhysicalType::BYTE_ARRAY, Some(LogicalType::String)),
        Column::Bool(_) => (PhysicalType::BOOLEAN, None),
    };
    Type::primitive_type_builder(name, physical)
        .with_repetition(Repetition::OPTIONAL)
        .with_logical_type(logical)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    #[derive(Serialize)]
    struct Row {
        job: String,
        iops: f64,
        requests: u64,
        p99_us: Option<f64>,
        priority: bool,
    }

    #[test]
    fn rows_round_trip_through_parquet_with_types_and_nulls() {
        let rows = [
            Row { job: "logger".to_owned(), iops: 10.5, requests: 3, p99_us: Some(1.5), priority: true },
            Row { job: "bulk".to_owned(), iops: 2.0, requests: 7, p99_us: None, priority: false },
        ];
        let table = Table::from_rows(&rows).expect("table");
        assert_eq!(table.rows(), 2);
        assert_eq!(table.columns[2].1, Column::Int(vec![Some(3), Some(7)]));
        assert_eq!(table.columns[3].1, Column::Float(vec![Some(1.5), None]));
        let path = std::env::temp_dir().join(format!("nandlab-table-test-{}.parquet", std::process::id()));
        table.write_parquet(std::fs::File::create(&path).expect("file"), "jobs.parquet").expect("parquet");
        assert_eq!(&std::fs::read(&path).expect("bytes")[..4], b"PAR1");
        let reader = SerializedFileReader::new(std::fs::File::open(&path).expect("file")).expect("reads back");
        let metadata = reader.metadata();
        assert_eq!(metadata.file_metadata().num_rows(), 2);
        let names: Vec<&str> = metadata.file_metadata().schema_descr().columns().iter().map(|c| c.name()).collect();
        assert_eq!(names, ["job", "iops", "requests", "p99_us", "priority"]);
        let text: Vec<String> =
            reader.get_row_iter(None).expect("rows").map(|row| row.expect("row").to_string()).collect();
        assert!(text[1].contains("\"bulk\"") && text[1].contains("p99_us: null"), "{text:?}");
        std::fs::remove_file(path).expect("cleanup");
    }

    #[test]
    fn documents_flatten_to_one_row_without_arrays() {
        let document = serde_json::json!({"schema_version": 1, "measured": {"waf": 1.25, "counters": {"erases": 4}}, "series": [1, 2]});
        let table = Table::from_document(&document).expect("table");
        let names: Vec<&str> = table.columns.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["schema_version", "measured.waf", "measured.counters.erases"]);
        let mixed = serde_json::json!([{"a": 1}, {"a": "x"}]);
        let rows: Vec<Value> = mixed.as_array().expect("array").clone();
        assert!(matches!(Table::from_rows(&rows), Err(ReportError::Table { .. })));
    }
}
