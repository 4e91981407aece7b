"""The word lists of the shared reply reader (:mod:`medscope.answers.matching`): yes / no
particles in several languages, polarity words, normal / abnormal words, and the phrases of an
unusable image (clarify) or of declining to decide (refer). One table a reviewer can read."""

YES_PARTICLES = ("yes", "yeah", "yep", "yup", "correct", "affirmative", "true", "indeed", "i think so",
                 "i believe so", "sí", "si", "oui", "ja", "да", "是", "有", "はい", "sim", "evet", "tak")
NO_PARTICLES = ("no", "nope", "nah", "false", "incorrect", "non", "nein", "nee", "нет", "否", "没有",
                "いいえ", "não", "nao", "hayır", "nie", "not that i can see", "i do not think so",
                "i do not believe so", "not really", "not at all")
POLARITY_WORDS = {"present": True, "positive": True, "absent": False, "negative": False, "none": False,
                  "nothing": False, "unlikely": False, "likely": True}
NORMAL_WORDS = ("within normal limits", "normal", "healthy", "unremarkable", "no acute")
ABNORMAL_WORDS = ("abnormal", "abnormality", "abnormalities", "unhealthy", "pathological", "pathology",
                  "diseased", "lesion", "lesions", "mass", "masses", "tumor", "tumour", "anomaly",
                  "suspicious")
CLARIFY_PHRASES = (
    "too blurry", "blurry", "blurred", "blur", "too noisy", "noisy", "noise", "low resolution",
    "low-resolution", "poor quality", "image quality", "poor image", "unusable", "non-diagnostic",
    "nondiagnostic", "not diagnostic", "uninterpretable", "can not be interpreted", "degraded",
    "artifact", "artefact", "please provide", "could you provide", "can you provide", "better image",
    "clearer image", "another image", "wrong anatomy", "different anatomy", "different modality",
    "different body part", "wrong body part",
)
REFER_PHRASES = (
    "can not determine", "unable to determine", "can not be determined", "can not tell", "unclear",
    "uncertain", "not sure", "indeterminate", "equivocal", "i do not know", "unknown", "can not say",
    "not possible to", "not clear", "difficult to", "hard to", "unable to assess", "unable to evaluate",
    "can not assess", "can not evaluate", "can not decide", "unable to decide", "refer", "specialist",
    "radiologist should", "opinion", "further imaging", "further evaluation", "clinical correlation",
    "can not answer", "unable to answer", "not able to", "may or may not",
)
