//! The palette every chart and the live plots draw with: Tableau 10's hues, darkened on
//! a light theme, and shades of each hue for families of configs ([`color`]).

use egui::Color32;

/// Tableau 10: distinct hues that read on dark backgrounds (a light one darkens them).
const PALETTE: [Color32; 10] = [
    Color32::from_rgb(0x4e, 0x79, 0xa7),
    Color32::from_rgb(0xf2, 0x8e, 0x2b),
    Color32::from_rgb(0xe1, 0x57, 0x59),
    Color32::from_rgb(0x76, 0xb7, 0xb2),
    Color32::from_rgb(0x59, 0xa1, 0x4f),
    Color32::from_rgb(0xed, 0xc9, 0x48),
    Color32::from_rgb(0xb0, 0x7a, 0xa1),
    Color32::from_rgb(0xff, 0x9d, 0xa7),
    Color32::from_rgb(0x9c, 0x75, 0x5f),
    Color32::from_rgb(0xba, 0xb0, 0xac),
];

/// Palette entries this far apart share a hue in another shade.
pub const SHADE_STEP: usize = PALETTE.len();

/// How far a light background darkens the palette: yellow, pink and grey stand out from
/// white only darker.
const LIGHT_THEME_DARKENING: f32 = 0.25;

/// How far each further shade of a hue moves from it, and the farthest.
const SHADE: f32 = 0.15;
const FARTHEST_SHADE: f32 = 0.5;

/// The colour of palette entry `index` on a dark or light background: hue
/// `index % SHADE_STEP`, each further `SHADE_STEP` a shade farther from the background
/// (lighter on dark, darker on light), so a family of configs reads in one hue and
/// every member stands out from the background.
pub fn color(index: usize, dark_mode: bool) -> Color32 {
    let hue = PALETTE[index % SHADE_STEP];
    let (hue, away) = if dark_mode {
        (hue, Color32::WHITE)
    } else {
        (
            hue.lerp_to_gamma(Color32::BLACK, LIGHT_THEME_DARKENING),
            Color32::BLACK,
        )
    };
    let shade = (index / SHADE_STEP) as f32;
    hue.lerp_to_gamma(away, (shade * SHADE).min(FARTHEST_SHADE))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The WCAG contrast ratio of two colours (1 to 21).
    fn contrast(a: Color32, b: Color32) -> f32 {
        let luminance = |c: Color32| {
            let linear = egui::Rgba::from(c);
            0.2126 * linear.r() + 0.7152 * linear.g() + 0.0722 * linear.b()
        };
        let (a, b) = (luminance(a), luminance(b));
        (a.max(b) + 0.05) / (a.min(b) + 0.05)
    }

    #[test]
    fn every_colour_and_shade_stands_out_from_either_theme_s_background() {
        for (dark_mode, visuals, least) in [
            (true, egui::Visuals::dark(), 3.5),
            (false, egui::Visuals::light(), 2.8),
        ] {
            let background = visuals.extreme_bg_color;
            for index in 0..4 * SHADE_STEP {
                let c = color(index, dark_mode);
                let ratio = contrast(c, background);
                assert!(ratio >= least, "{index} (dark {dark_mode}): {ratio}");
                let next_shade = color(index + SHADE_STEP, dark_mode);
                assert_ne!(c, next_shade, "{index}: shades of a hue differ");
            }
        }
    }
}
