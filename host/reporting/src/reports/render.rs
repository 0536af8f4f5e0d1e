//! A report's content written as CSV, XLSX or PDF to a file.
//!
//! - CSV: the report's main table (its longest one a spreadsheet shows),
//!   with every cell a spreadsheet would run neutralized;
//! - XLSX (`rust_xlsxwriter`): a summary sheet, then one sheet per table,
//!   numbers as numbers, rows streamed (constant memory);
//! - PDF (`printpdf`, the standard Helvetica): a title page with the
//!   organization, the date and the scope, the key figures and a severity
//!   chart, then each table, breaking across pages with its header
//!   repeated, and page numbers. Text outside Latin-1 shows as `?`: the
//!   standard fonts cannot draw it.

use std::io::{BufWriter, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::content::{Cell, Content, Shown, Table};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Pdf,
    Csv,
    Xlsx,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Pdf => "pdf",
            Format::Csv => "csv",
            Format::Xlsx => "xlsx",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Pdf => "application/pdf",
            Format::Csv => "text/csv; charset=utf-8",
            Format::Xlsx => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("writing the file: {0}")]
    Io(#[from] std::io::Error),
    #[error("CSV: {0}")]
    Csv(#[from] csv::Error),
    #[error("XLSX: {0}")]
    Xlsx(#[from] rust_xlsxwriter::XlsxError),
    #[error("PDF: {0}")]
    Pdf(String),
}

/// Writes `content` as `format` to `path`.
pub fn write(content: &Content, format: Format, path: &Path) -> Result<(), RenderError> {
    match format {
        Format::Csv => csv_file(content, path),
        Format::Xlsx => xlsx_file(content, path),
        Format::Pdf => pdf_file(content, path),
    }
}

fn in_spreadsheets(table: &Table) -> bool {
    table.shown != Shown::DocumentOnly
}

/// The table rows `format` holds.
pub fn rows_in(content: &Content, format: Format) -> i64 {
    let shown = |t: &&Table| match format {
        Format::Pdf => t.shown != Shown::SpreadsheetsOnly,
        Format::Xlsx => in_spreadsheets(t),
        Format::Csv => false,
    };
    match format {
        Format::Csv => main_table(content).map_or(content.figures.len(), |t| t.rows.len()) as i64,
        _ => content
            .tables
            .iter()
            .filter(shown)
            .map(|t| t.rows.len() as i64)
            .sum(),
    }
}

/// The table a CSV holds: the longest a spreadsheet shows.
fn main_table(content: &Content) -> Option<&Table> {
    content
        .tables
        .iter()
        .filter(|t| in_spreadsheets(t))
        .max_by_key(|t| t.rows.len())
}

fn csv_file(content: &Content, path: &Path) -> Result<(), RenderError> {
    let mut writer = csv::Writer::from_writer(BufWriter::new(std::fs::File::create(path)?));
    match main_table(content) {
        Some(table) => {
            writer.write_record(&table.columns)?;
            for row in &table.rows {
                writer.write_record(row.iter().map(|cell| {
                    cairn_integrations::neutralized_csv_cell(&cell.text()).into_owned()
                }))?;
            }
        }
        None => {
            writer.write_record(["Figure", "Value"])?;
            for (label, value) in &content.figures {
                writer.write_record([label, value])?;
            }
        }
    }
    writer.flush()?;
    Ok(())
}

/// A sheet name Excel accepts: at most 31 characters, none of `[]:*?/\`.
fn sheet_name(name: &str) -> String {
    name.chars()
        .filter(|c| !"[]:*?/\\".contains(*c))
        .take(31)
        .collect()
}

fn xlsx_file(content: &Content, path: &Path) -> Result<(), RenderError> {
    use rust_xlsxwriter::{Color, Format as CellFormat, Image, Workbook};
    let mut bold = CellFormat::new().set_bold();
    if let Some((r, g, b)) = content.brand.as_ref().and_then(|b| b.primary) {
        let channel = |v: f32| (v * 255.0).round() as u32;
        bold = bold.set_font_color(Color::RGB(
            (channel(r) << 16) | (channel(g) << 8) | channel(b),
        ));
    }
    let mut workbook = Workbook::new();
    {
        let summary = workbook.add_worksheet_with_constant_memory();
        summary.set_name("Summary")?;
        summary.write_string_with_format(0, 0, &content.title, &bold)?;
        summary.write_string(1, 0, &content.tenant_name)?;
        summary.write_string(2, 0, format!("As of {}", &content.as_of))?;
        summary.write_string(3, 0, &content.scope_note)?;
        if let Some(brand) = &content.brand {
            summary.write_string(4, 0, format!("Prepared by {}", brand.prepared_by))?;
            if let Some(logo) = &brand.logo_png {
                let image = Image::new_from_buffer(logo)?.set_scale_to_size(160, 80, true);
                summary.insert_image(0, 3, &image)?;
            }
        }
        for (row, (label, value)) in (6..).zip(&content.figures) {
            summary.write_string(row, 0, label)?;
            match value.parse::<i64>() {
                Ok(n) => summary.write_number(row, 1, n as f64)?,
                Err(_) => summary.write_string(row, 1, value)?,
            };
        }
        summary.set_column_width(0, 45)?;
    }
    for table in content.tables.iter().filter(|t| in_spreadsheets(t)) {
        let sheet = workbook.add_worksheet_with_constant_memory();
        sheet.set_name(sheet_name(&table.name))?;
        for (col, name) in table.columns.iter().enumerate() {
            sheet.write_string_with_format(0, col as u16, *name, &bold)?;
        }
        for (r, row) in table.rows.iter().enumerate() {
            let r = r as u32 + 1;
            for (c, cell) in row.iter().enumerate() {
                let c = c as u16;
                match cell {
                    Cell::Text(t) => {
                        sheet.write_string(r, c, &**t)?;
                    }
                    Cell::Integer(n) => {
                        sheet.write_number(r, c, *n as f64)?;
                    }
                    Cell::Number(n) => {
                        sheet.write_number(r, c, *n)?;
                    }
                    Cell::Empty => {}
                }
            }
        }
    }
    workbook.save(path)?;
    Ok(())
}

/// Text the standard fonts can draw: Latin-1 kept, anything else `?`.
fn drawable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if (c as u32) < 0x100 && !c.is_control() {
                c
            } else {
                '?'
            }
        })
        .collect()
}

/// At most `chars` characters, with an ellipsis when cut.
fn fit(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(chars.saturating_sub(3)).collect();
    cut.push_str("...");
    cut
}

const PAGE_W: f32 = 210.0;
const PAGE_H: f32 = 297.0;
const MARGIN: f32 = 15.0;
const ROW_H: f32 = 4.2;
/// Height of each further line of a wrapped table cell, in mm.
const WRAP_LINE_H: f32 = 3.0;
/// Lines a table cell may wrap to; the last is cut with an ellipsis.
const MAX_CELL_LINES: usize = 6;
const TABLE_PT: f32 = 7.0;
/// Width of a Helvetica character at 1 pt, in mm: its digits (0.556 em),
/// wider than the average letter, so that a version or an id sized by it
/// stays inside its column.
const CHAR_MM_PER_PT: f32 = 0.2;

struct Pdf {
    doc: printpdf::PdfDocumentReference,
    font: printpdf::IndirectFontRef,
    bold: printpdf::IndirectFontRef,
    pages: Vec<printpdf::PdfLayerReference>,
    /// Where the next line goes on the current page, mm from the bottom.
    y: f32,
    /// The colour of headings (a partner's primary colour), else black.
    heading: (f32, f32, f32),
}

impl Pdf {
    fn layer(&self) -> &printpdf::PdfLayerReference {
        self.pages.last().expect("a document has a page")
    }

    fn new_page(&mut self) {
        let (page, layer) =
            self.doc
                .add_page(printpdf::Mm(PAGE_W), printpdf::Mm(PAGE_H), "content");
        self.pages.push(self.doc.get_page(page).get_layer(layer));
        self.y = PAGE_H - MARGIN;
    }

    fn text(&self, text: &str, size: f32, x: f32, y: f32, bold: bool) {
        let font = if bold { &self.bold } else { &self.font };
        self.layer()
            .use_text(drawable(text), size, printpdf::Mm(x), printpdf::Mm(y), font);
    }

    /// A line of text at the cursor, on a new page when this one is full;
    /// bold lines are headings, in the heading colour.
    fn line(&mut self, text: &str, size: f32, bold: bool) {
        let height = size * 0.5;
        if self.y - height < MARGIN + 8.0 {
            self.new_page();
        }
        self.y -= height;
        if bold {
            self.fill(self.heading);
        }
        self.text(text, size, MARGIN, self.y, bold);
        self.fill(BLACK);
        self.y -= 1.5;
    }

    fn fill(&self, rgb: (f32, f32, f32)) {
        self.layer()
            .set_fill_color(printpdf::Color::Rgb(printpdf::Rgb::new(
                rgb.0, rgb.1, rgb.2, None,
            )));
    }

    fn rect(&self, x: f32, y: f32, w: f32, h: f32) {
        let rect = printpdf::Rect::new(
            printpdf::Mm(x),
            printpdf::Mm(y),
            printpdf::Mm(x + w),
            printpdf::Mm(y + h),
        );
        self.layer().add_rect(rect);
    }
}

const BLACK: (f32, f32, f32) = (0.0, 0.0, 0.0);

/// A PNG as an image the PDF can hold: 8-bit RGB, transparency laid over
/// white. `None` for bytes that do not decode (the logo is then left out).
fn pdf_image(png_bytes: &[u8]) -> Option<printpdf::ImageXObject> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().ok()?;
    let mut buffer = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut buffer).ok()?;
    let pixels = &buffer[..frame.buffer_size()];
    let over_white = |v: u8, alpha: u8| {
        ((u16::from(v) * u16::from(alpha) + 255 * (255 - u16::from(alpha))) / 255) as u8
    };
    let rgb: Vec<u8> = match frame.color_type {
        png::ColorType::Rgb => pixels.to_vec(),
        png::ColorType::Rgba => pixels
            .chunks_exact(4)
            .flat_map(|p| {
                [
                    over_white(p[0], p[3]),
                    over_white(p[1], p[3]),
                    over_white(p[2], p[3]),
                ]
            })
            .collect(),
        png::ColorType::Grayscale => pixels.iter().flat_map(|g| [*g, *g, *g]).collect(),
        png::ColorType::GrayscaleAlpha => pixels
            .chunks_exact(2)
            .flat_map(|p| {
                let g = over_white(p[0], p[1]);
                [g, g, g]
            })
            .collect(),
        png::ColorType::Indexed => return None,
    };
    Some(printpdf::ImageXObject {
        width: printpdf::Px(frame.width as usize),
        height: printpdf::Px(frame.height as usize),
        color_space: printpdf::ColorSpace::Rgb,
        bits_per_component: printpdf::ColorBits::Bit8,
        interpolate: true,
        image_data: rgb,
        image_filter: None,
        smask: None,
        clipping_bbox: None,
    })
}

/// Draws `image` in the top right corner of the first page, at most 40 by
/// 20 mm.
fn pdf_logo(layer: &printpdf::PdfLayerReference, image: printpdf::ImageXObject) {
    let (w, h) = (image.width.0 as f32, image.height.0 as f32);
    // Dots per inch that make the image fit the box.
    let dpi = (w * 25.4 / 40.0).max(h * 25.4 / 20.0).max(1.0);
    let (w_mm, h_mm) = (w * 25.4 / dpi, h * 25.4 / dpi);
    printpdf::Image::from(image).add_to_layer(
        layer.clone(),
        printpdf::ImageTransform {
            translate_x: Some(printpdf::Mm(PAGE_W - MARGIN - w_mm)),
            translate_y: Some(printpdf::Mm(PAGE_H - MARGIN - h_mm)),
            dpi: Some(dpi),
            ..Default::default()
        },
    );
}

const SEVERITY_COLORS: [(f32, f32, f32); 5] = [
    (0.60, 0.05, 0.10),
    (0.85, 0.30, 0.10),
    (0.95, 0.65, 0.10),
    (0.30, 0.55, 0.80),
    (0.60, 0.60, 0.60),
];

fn pdf_file(content: &Content, path: &Path) -> Result<(), RenderError> {
    let (doc, page, layer) = printpdf::PdfDocument::new(
        drawable(&content.title),
        printpdf::Mm(PAGE_W),
        printpdf::Mm(PAGE_H),
        "content",
    );
    let font = doc
        .add_builtin_font(printpdf::BuiltinFont::Helvetica)
        .map_err(|e| RenderError::Pdf(e.to_string()))?;
    let bold = doc
        .add_builtin_font(printpdf::BuiltinFont::HelveticaBold)
        .map_err(|e| RenderError::Pdf(e.to_string()))?;
    let first = doc.get_page(page).get_layer(layer);
    let mut pdf = Pdf {
        doc,
        font,
        bold,
        pages: vec![first],
        y: PAGE_H - MARGIN,
        heading: content
            .brand
            .as_ref()
            .and_then(|b| b.primary)
            .unwrap_or(BLACK),
    };
    // The title page.
    if let Some(logo) = content
        .brand
        .as_ref()
        .and_then(|b| b.logo_png.as_deref())
        .and_then(pdf_image)
    {
        pdf_logo(pdf.layer(), logo);
    }
    pdf.y = PAGE_H - 60.0;
    pdf.line(&content.title, 24.0, true);
    if let Some(accent) = content.brand.as_ref().and_then(|b| b.accent) {
        pdf.fill(accent);
        pdf.rect(MARGIN, pdf.y - 1.0, PAGE_W - 2.0 * MARGIN, 1.2);
        pdf.fill(BLACK);
        pdf.y -= 2.0;
    }
    pdf.y -= 4.0;
    pdf.line(&content.tenant_name, 16.0, false);
    if let Some(brand) = &content.brand {
        pdf.line(&format!("Prepared by {}", brand.prepared_by), 12.0, false);
    }
    pdf.line(&format!("As of {}", &content.as_of[..10]), 11.0, false);
    pdf.line(&content.scope_note, 10.0, false);
    pdf.y -= 8.0;
    pdf.line("Key figures", 13.0, true);
    for (label, value) in &content.figures {
        pdf.y -= 4.0;
        pdf.text(label, 10.0, MARGIN, pdf.y, false);
        pdf.text(value, 10.0, MARGIN + 110.0, pdf.y, true);
        pdf.y -= 1.0;
    }
    pdf.y -= 10.0;
    if !content.severity_chart.is_empty() {
        pdf.line("Open findings by severity", 13.0, true);
    }
    let max = content
        .severity_chart
        .iter()
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0)
        .max(1) as f32;
    for (i, (label, n)) in content.severity_chart.iter().enumerate() {
        pdf.y -= 8.0;
        pdf.text(label, 10.0, MARGIN, pdf.y + 1.0, false);
        pdf.fill(SEVERITY_COLORS[i % SEVERITY_COLORS.len()]);
        pdf.rect(MARGIN + 25.0, pdf.y, (*n as f32 / max) * 120.0 + 0.3, 5.0);
        pdf.fill((0.0, 0.0, 0.0));
        pdf.text(&n.to_string(), 10.0, MARGIN + 150.0, pdf.y + 1.0, false);
    }
    for table in content
        .tables
        .iter()
        .filter(|t| t.shown != Shown::SpreadsheetsOnly)
    {
        pdf.new_page();
        pdf_table(&mut pdf, table);
    }
    let total = pdf.pages.len();
    for (i, layer) in pdf.pages.iter().enumerate() {
        layer.use_text(
            format!("Page {} of {total}", i + 1),
            8.0,
            printpdf::Mm(PAGE_W - MARGIN - 25.0),
            printpdf::Mm(8.0),
            &pdf.font,
        );
        let footer = match &content.brand {
            Some(brand) => format!(
                "{} - {} - prepared by {}",
                content.tenant_name, content.title, brand.prepared_by
            ),
            None => format!("{} - {}", content.tenant_name, content.title),
        };
        layer.use_text(
            drawable(&footer),
            8.0,
            printpdf::Mm(MARGIN),
            printpdf::Mm(8.0),
            &pdf.font,
        );
    }
    let mut file = BufWriter::new(std::fs::File::create(path)?);
    pdf.doc
        .save(&mut file)
        .map_err(|e| RenderError::Pdf(e.to_string()))?;
    file.flush()?;
    Ok(())
}

/// `text` in lines of at most `chars` characters, broken after a space,
/// `.`, `-`, `_`, `/` or `,` where one falls in the line, else inside it:
/// a long version or id wraps whole instead of being cut. At most
/// [`MAX_CELL_LINES`] lines; the last is cut with an ellipsis when more
/// would follow.
fn wrap(text: &str, chars: usize) -> Vec<String> {
    let chars = chars.max(4);
    let mut lines = vec![];
    let mut rest: Vec<char> = text.chars().collect();
    while rest.len() > chars {
        if lines.len() + 1 == MAX_CELL_LINES {
            lines.push(fit(&rest.iter().collect::<String>(), chars));
            return lines;
        }
        let split = rest[..chars]
            .iter()
            .rposition(|c| matches!(c, ' ' | '.' | '-' | '_' | '/' | ','))
            .map_or(chars, |at| at + 1);
        let line: String = rest.drain(..split).collect();
        lines.push(line.trim_end().to_string());
    }
    lines.push(rest.into_iter().collect());
    lines
}

/// Characters of table text that fit in `width` mm, a character's gap
/// kept to the next column.
fn chars_in(width: f32) -> usize {
    ((width / (TABLE_PT * CHAR_MM_PER_PT)) as usize).saturating_sub(1)
}

/// Column widths in mm: by the longest text (header included, first 200
/// rows), scaled to the page. A short column (a status, a date) gets its
/// whole text first, so that only the long ones wrap; every column is at
/// least as wide as its heading's longest word, so that a heading wraps
/// between words and is never cut ("Sev...").
fn widths(table: &Table) -> Vec<f32> {
    let char_mm = TABLE_PT * CHAR_MM_PER_PT;
    let floors: Vec<f32> = table
        .columns
        .iter()
        .map(|c| {
            let word = c.split(' ').map(|w| w.chars().count()).max().unwrap_or(0);
            (word + 2) as f32 * char_mm
        })
        .collect();
    let mut widths = text_widths(table);
    let deficit: f32 = widths
        .iter()
        .zip(&floors)
        .map(|(w, f)| (f - w).max(0.0))
        .sum();
    let slack: f32 = widths
        .iter()
        .zip(&floors)
        .map(|(w, f)| (w - f).max(0.0))
        .sum();
    if deficit > 0.0 && slack >= deficit {
        for (w, f) in widths.iter_mut().zip(&floors) {
            *w = match *w < *f {
                true => *f,
                false => *w - deficit * (*w - *f) / slack,
            };
        }
    }
    widths
}

/// The widths by the columns' text alone.
fn text_widths(table: &Table) -> Vec<f32> {
    let mut longest: Vec<usize> = table.columns.iter().map(|c| c.len()).collect();
    for row in table.rows.iter().take(200) {
        for (i, cell) in row.iter().enumerate() {
            longest[i] = longest[i].max(cell.text().chars().count().min(60));
        }
    }
    let usable = PAGE_W - 2.0 * MARGIN;
    let char_mm = TABLE_PT * CHAR_MM_PER_PT;
    let whole = |chars: usize| (chars + 2) as f32 * char_mm;
    let short: Vec<bool> = longest.iter().map(|l| *l <= SHORT_COLUMN).collect();
    let reserved: f32 = longest
        .iter()
        .zip(&short)
        .filter(|(_, short)| **short)
        .map(|(l, _)| whole(*l))
        .sum();
    let long_sum: usize = longest
        .iter()
        .zip(&short)
        .filter(|(_, short)| !**short)
        .map(|(l, _)| l + 2)
        .sum();
    // Short columns keep their width only while the long ones still get
    // a fair share of the page; past that, every column is scaled alike.
    if long_sum == 0 || reserved > usable / 2.0 {
        let sum: usize = longest.iter().map(|l| l + 2).sum();
        return longest
            .iter()
            .map(|l| usable * (*l + 2) as f32 / sum as f32)
            .collect();
    }
    longest
        .iter()
        .zip(&short)
        .map(|(l, short)| match short {
            true => whole(*l),
            false => (usable - reserved) * (*l + 2) as f32 / long_sum as f32,
        })
        .collect()
}

/// Columns of at most this many characters are not wrapped while the
/// page allows.
const SHORT_COLUMN: usize = 12;

fn pdf_table(pdf: &mut Pdf, table: &Table) {
    let widths = widths(table);
    let headings: Vec<Vec<String>> = table
        .columns
        .iter()
        .zip(&widths)
        .map(|(column, width)| wrap(column, chars_in(*width)))
        .collect();
    let header = |pdf: &mut Pdf| {
        pdf.y -= ROW_H;
        let mut x = MARGIN;
        for (lines, width) in headings.iter().zip(&widths) {
            for (i, line) in lines.iter().enumerate() {
                pdf.text(line, TABLE_PT, x, pdf.y - i as f32 * WRAP_LINE_H, true);
            }
            x += width;
        }
        let lines = headings.iter().map(Vec::len).max().unwrap_or(1);
        pdf.y -= (lines - 1) as f32 * WRAP_LINE_H + 1.0;
    };
    pdf.line(
        &format!("{} ({} rows)", table.name, table.rows.len()),
        13.0,
        true,
    );
    header(pdf);
    for row in &table.rows {
        let cells: Vec<Vec<String>> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| wrap(&cell.text(), chars_in(*width)))
            .collect();
        let lines = cells.iter().map(Vec::len).max().unwrap_or(1);
        let height = ROW_H + (lines - 1) as f32 * WRAP_LINE_H;
        if pdf.y - height < MARGIN + 8.0 {
            pdf.new_page();
            pdf.line(&format!("{} (continued)", table.name), 10.0, true);
            header(pdf);
        }
        pdf.y -= ROW_H;
        let mut x = MARGIN;
        for (cell, width) in cells.iter().zip(&widths) {
            for (i, line) in cell.iter().enumerate() {
                pdf.text(line, TABLE_PT, x, pdf.y - i as f32 * WRAP_LINE_H, false);
            }
            x += width;
        }
        pdf.y -= (lines - 1) as f32 * WRAP_LINE_H;
    }
    if table.rows.is_empty() {
        pdf.line("None.", 9.0, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_cells_wrap_whole_at_separators() {
        for (text, chars, expected) in [
            ("7-Zip", 10, vec!["7-Zip"]),
            ("120.0.6099.71", 13, vec!["120.0.6099.71"]),
            ("120.0.6099.71", 8, vec!["120.0.", "6099.71"]),
            (
                "Mozilla Firefox ESR (x64 en-US)",
                12,
                vec!["Mozilla", "Firefox ESR", "(x64 en-US)"],
            ),
            (
                "2:1.2.13.dfsg-1ubuntu4.5",
                9,
                vec!["2:1.2.13.", "dfsg-", "1ubuntu4.", "5"],
            ),
            ("abcdefghijkl", 5, vec!["abcde", "fghij", "kl"]),
        ] {
            let lines = wrap(text, chars);
            assert_eq!(lines, expected, "{text} in {chars}");
            assert!(lines.iter().all(|l| l.chars().count() <= chars));
            assert_eq!(
                lines.concat().replace(' ', ""),
                text.replace(' ', ""),
                "nothing lost: {text}"
            );
        }
        // Past the line limit the last line says it was cut.
        let lines = wrap(&"a".repeat(100), 5);
        assert_eq!(lines.len(), MAX_CELL_LINES);
        assert!(lines.last().unwrap().ends_with("..."));
    }

    #[test]
    fn headings_wrap_between_words_and_are_never_cut() {
        // Two long columns among many short ones, as a findings list: the
        // page is shared out by text length, and the short columns'
        // headings were cut to "Sev..." and "De...".
        let long = Cell::Text("Mozilla Firefox ESR (x64 en-US) 115.5.0esr, for every user".into());
        let short = Cell::Text("2026-11-30".into());
        let columns = vec![
            "Device",
            "Application",
            "Version",
            "CVE",
            "Severity",
            "CVSS",
            "EPSS",
            "KEV",
            "Due date",
            "Devices",
            "First seen",
            "Status",
        ];
        let row: Vec<Cell> = (0..columns.len())
            .map(|i| if i < 2 { long.clone() } else { short.clone() })
            .collect();
        let table = Table {
            name: "Findings".into(),
            rows: vec![row; 3],
            columns,
            shown: Shown::Everywhere,
        };
        let widths = widths(&table);
        let usable = PAGE_W - 2.0 * MARGIN;
        assert!(widths.iter().sum::<f32>() <= usable + 0.01, "{widths:?}");
        for (column, width) in table.columns.iter().zip(&widths) {
            let lines = wrap(column, chars_in(*width));
            for word in column.split(' ') {
                assert!(
                    lines.iter().any(|l| l.split(' ').any(|w| w == word)),
                    "{column} in {width} mm: {lines:?}"
                );
            }
        }
    }

    #[test]
    fn sheet_names_and_cells_fit() {
        assert_eq!(sheet_name("Top CVEs: by [devices]?"), "Top CVEs by devices");
        assert_eq!(sheet_name(&"x".repeat(40)).len(), 31);
        assert_eq!(fit("abcdefghij", 6), "abc...");
        assert_eq!(fit("abc", 6), "abc");
        assert_eq!(drawable("Müller 株式会社"), "Müller ????");
    }
}
