//! What an image costs each provider, from its real dimensions.
//!
//! Dimensions come from the image's own header (PNG, JPEG, GIF, WebP, read by
//! the `imagesize` crate from the first bytes of the base64 data). The rules,
//! from the providers' documentation:
//!
//! - OpenAI (vision guide, "Calculating costs"): `detail: low` is 85 tokens.
//!   `high` and `auto`: fit in 2048×2048, scale the shortest side to 768,
//!   then 170 tokens per 512-px tile plus 85. GPT-4o mini charges 2,833 base
//!   and 5,667 per tile; o1 and o3 75 and 150.
//! - Anthropic (vision guide, "Evaluate image size"): an image whose long
//!   edge is over 1,568 px is scaled down to it; tokens = width × height /
//!   750, rounded up.
//! - Gemini (token counting guide): 258 tokens when both sides are at most
//!   384 px, else 258 per 768×768 tile.
//!
//! An image whose size cannot be read (a remote URL, a file path, an
//! unreadable header) costs the provider's maximum for its detail, and is
//! marked estimated.

pub use crate::transcript::image_dimensions as dimensions;
use crate::transcript::Image;

/// The provider family whose image rule applies.
#[derive(Clone, Debug, PartialEq)]
pub enum ImageRule {
    /// OpenAI's tiles: base and per-tile tokens.
    OpenAi {
        /// Tokens for every image (and all of a `low` one).
        base: usize,
        /// Tokens per 512-px tile.
        tile: usize,
    },
    /// Anthropic's pixels / 750.
    Anthropic,
    /// Gemini's 258 per 768-px tile.
    Gemini,
}

impl ImageRule {
    /// The tokens of one image, and whether they are an estimate (its size
    /// was unknown).
    pub fn tokens(&self, image: &Image) -> (usize, bool) {
        let dims = image.width.zip(image.height);
        match (self, dims) {
            (ImageRule::OpenAi { base, .. }, _) if image.detail.as_deref() == Some("low") => {
                (*base, false)
            }
            (ImageRule::OpenAi { base, tile }, Some((w, h))) => {
                (openai_tiles(w, h) * tile + base, false)
            }
            // The most tiles an image can have: 2048 × 768 → 4 × 2.
            (ImageRule::OpenAi { base, tile }, None) => (8 * tile + base, true),
            (ImageRule::Anthropic, Some((w, h))) => (anthropic(w, h), false),
            // A 1568-px long edge at the pixel limit: about 1,600 tokens.
            (ImageRule::Anthropic, None) => (1600, true),
            (ImageRule::Gemini, Some((w, h))) => (gemini(w, h), false),
            // Gemini 2.x scales images to fit 3072 px: 4 × 4 tiles at most.
            (ImageRule::Gemini, None) => (258 * 16, true),
        }
    }
}

/// OpenAI's 512-px tiles of a `high` image.
fn openai_tiles(w: u32, h: u32) -> usize {
    let (mut w, mut h) = (f64::from(w), f64::from(h));
    if w > 2048.0 || h > 2048.0 {
        let s = 2048.0 / w.max(h);
        w *= s;
        h *= s;
    }
    let short = w.min(h);
    if short > 768.0 {
        let s = 768.0 / short;
        w *= s;
        h *= s;
    }
    ((w / 512.0).ceil() * (h / 512.0).ceil()) as usize
}

/// Anthropic's tokens: the long edge at most 1568 px, then w·h/750.
fn anthropic(w: u32, h: u32) -> usize {
    let (mut w, mut h) = (f64::from(w), f64::from(h));
    let long = w.max(h);
    if long > 1568.0 {
        let s = 1568.0 / long;
        w = (w * s).floor();
        h = (h * s).floor();
    }
    (w * h / 750.0).ceil() as usize
}

/// Gemini's tokens: 258 for a small image, else 258 per 768-px tile.
fn gemini(w: u32, h: u32) -> usize {
    if w <= 384 && h <= 384 {
        return 258;
    }
    (w.div_ceil(768) as usize) * (h.div_ceil(768) as usize) * 258
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn image(w: u32, h: u32, detail: Option<&str>) -> Image {
        Image {
            width: Some(w),
            height: Some(h),
            detail: detail.map(str::to_string),
            ..Image::default()
        }
    }

    /// OpenAI's worked examples ("Calculating costs", vision guide).
    #[test]
    fn openai_worked_examples() {
        let gpt4o = ImageRule::OpenAi {
            base: 85,
            tile: 170,
        };
        // 1024 × 1024, high: 768 × 768, 4 tiles: 765.
        assert_eq!(gpt4o.tokens(&image(1024, 1024, Some("high"))), (765, false));
        // 2048 × 4096, high: 1024 × 2048 → 768 × 1536, 6 tiles: 1105.
        assert_eq!(
            gpt4o.tokens(&image(2048, 4096, Some("high"))),
            (1105, false)
        );
        // 4096 × 8192, low: 85.
        assert_eq!(gpt4o.tokens(&image(4096, 8192, Some("low"))), (85, false));
        // A small image is one tile.
        assert_eq!(gpt4o.tokens(&image(100, 100, None)), (255, false));
        // Unknown size: the most tiles, estimated.
        assert_eq!(gpt4o.tokens(&Image::default()), (1445, true));
        let mini = ImageRule::OpenAi {
            base: 2833,
            tile: 5667,
        };
        assert_eq!(mini.tokens(&image(1024, 1024, None)).0, 2833 + 4 * 5667);
    }

    /// Anthropic's table ("Evaluate image size", vision guide).
    #[test]
    fn anthropic_worked_examples() {
        let a = ImageRule::Anthropic;
        assert_eq!(a.tokens(&image(200, 200, None)), (54, false));
        assert_eq!(a.tokens(&image(1000, 1000, None)), (1334, false));
        assert_eq!(a.tokens(&image(1092, 1092, None)), (1590, false));
        // Long edge scaled to 1568 first.
        assert_eq!(
            a.tokens(&image(3136, 1568, None)),
            ((1568 * 784_usize).div_ceil(750), false)
        );
        assert_eq!(a.tokens(&Image::default()), (1600, true));
    }

    /// Gemini ("Understand and count tokens": 258 per image up to 384 px,
    /// else per 768-px tile).
    #[test]
    fn gemini_worked_examples() {
        let g = ImageRule::Gemini;
        assert_eq!(g.tokens(&image(384, 384, None)), (258, false));
        assert_eq!(g.tokens(&image(960, 540, None)), (516, false));
        assert_eq!(g.tokens(&image(1536, 1536, None)), (1032, false));
    }

    #[test]
    fn dimensions_come_from_the_header() {
        // A 1×1 PNG and a 3×2 GIF.
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        assert_eq!(dimensions(png), Some((1, 1)));
        let gif = base64::engine::general_purpose::STANDARD
            .encode(b"GIF89a\x03\x00\x02\x00\x00\x00\x00;");
        assert_eq!(dimensions(&gif), Some((3, 2)));
        assert_eq!(dimensions("not an image"), None);
        assert_eq!(dimensions(""), None);
    }
}
