"""The blinded physician reading of the counterfactual paper §7: does an erased finding stay visible, do erased
images look edited, is the control edit as recognisable as the erasure?

- :mod:`medscope.reader.sample` draws the stratified image sample from a views table's main test;
- :mod:`medscope.reader.pack` re-saves the images under opaque names, writes the static reading
  page (:mod:`medscope.reader.page`) and keeps the answer key beside the pack, with its hash;
- :mod:`medscope.reader.answers` reads readers' answer files (only those of the given packs);
- :mod:`medscope.reader.rating_stats` holds the pre-specified statistics (AUC, Cohen's kappa,
  Clopper-Pearson) and :mod:`medscope.reader.analysis` applies them per reader, by majority and
  by source; :mod:`medscope.reader.study_report` turns the result into a report section.
"""

from medscope.io import layout

# The reader's four image kinds (§7 "Images") and the views-table kinds they are drawn from.
VIEW_KIND_OF = {
    "lesion": "original",  # unmodified image with the finding
    "erased": "target_removal",  # the finding erased
    "control": "random_removal",  # the same shape erased elsewhere with the same tool, finding intact
    "lesion_free": "natural_negative",  # unmodified image without the finding
}
READER_KINDS = tuple(VIEW_KIND_OF)
EDITED_KINDS = ("erased", "control")
UNMODIFIED_KINDS = ("lesion", "lesion_free")

# The page's answer scales; the edit rating's order is the four-level score the AUCs use (1..4).
EDIT_RATINGS = ("definitely_real", "probably_real", "probably_edited", "definitely_edited")
CLINICAL_ANSWERS = ("yes", "no", "cannot_tell")

# File names inside a pack folder and an analysis folder: medscope.io.layout owns them.
READING_DIR = layout.ReaderPack.READING  # what the readers get: the page and its images, no key
PAGE_FILE = layout.ReaderPack.PAGE
IMAGES_DIR = layout.ReaderPack.IMAGES
KEY_FILE = layout.ReaderPack.KEY  # the answer key, beside the reading folder, naming the pack hash
ANSWERS_FORMAT = "medscope-reader-answers"

ANALYSIS_FILE = layout.ReaderAnalysis.ANALYSIS
REJECTS_FILE = layout.ReaderAnalysis.REJECTS
REPORT_MD = layout.ReaderAnalysis.MARKDOWN
REPORT_HTML = layout.ReaderAnalysis.HTML
