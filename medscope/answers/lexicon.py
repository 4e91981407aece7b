"""The word lists of the shared reply reader (:mod:`medscope.answers.matching`): yes / no
particles in several languages, polarity words, normal / abnormal words, and the phrases of an
unusable image (clarify) or of declining to decide (refer). One table a reviewer can read."""

# Informal spellings and typos ("yess", "noo", "ya") and one-word answers in the languages
# models answer in when the prompt or the user's locale is not English.
YES_PARTICLES = ("yes", "yess", "yesss", "yeah", "yea", "yah", "ya", "ye", "yep", "yup", "correct", "affirmative",
                 "true", "indeed", "i think so", "i believe so", "definitely", "absolutely",
                 "sí", "sì", "si", "oui", "ja", "jawel", "да", "是", "是的", "对", "有", "はい", "ある", "あります", "네", "예",
                 "있습니다", "sim", "evet", "tak", "ano", "igen", "kyllä", "ναι", "نعم", "हाँ", "हां", "haan", "có", "iya",
                 "כן")
NO_PARTICLES = ("yeah no", "yeah, no", "no", "noo", "nooo", "nope", "nah", "naw", "nay", "false", "incorrect", "non", "nein", "nee", "нет",
                "否", "不", "不是", "没有", "無い", "ない", "いいえ", "아니요", "아니오", "없습니다", "não", "nao", "hayır",
                "nie", "ne", "nem", "όχι", "لا", "לא", "नहीं", "nahi", "def not", "definitely not", "absolutely not",
                "certainly not", "no way", "not that i can see", "i do not think so", "không", "tidak",
                "i do not believe so", "not really", "not at all")
# (issue 48, set R) particles that are also the language's "not" / "there is" before a word ("không thấy", "tidak
# ada", "có tràn khí"): a particle only where punctuation or the end follows
PUNCTUATED_PARTICLES = ("không", "tidak", "có")
# A hedged lead before the particle keeps the particle's polarity ("I would say no", "Probably
# yes", "I'd lean towards yes"): the hedge rule reads a hedged verdict as that verdict.
HEDGED_LEADS = ("i would say", "i would lean towards", "i would lean toward", "i lean towards", "i lean toward",
                "leaning towards", "leaning toward", "i would guess", "my guess is", "i guess", "i think",
                "i believe", "i suspect", "probably", "most likely", "mostly likely", "more likely", "likely",
                "very likely", "almost certainly", "i would go with", "i am going with", "i will go with",
                "possibly", "quite possibly", "most probably")
POLARITY_WORDS = {"present": True, "positive": True, "absent": False, "negative": False, "none": False,
                  "nothing": False, "unlikely": False, "likely": True}
NORMAL_WORDS = ("within normal limits", "normal", "healthy", "unremarkable", "no acute", "looks fine", "look fine",
                "looks okay", "looks ok", "looks good",
                "look okay", "look ok", "look good", "look clean", "looks clean", "fine to me", "nothing concerning", "nothing worrying",
                "sano", "sana", "normale", "gesund", "sain", "saudável", "正常", "健康",
                # "within the norm" in Italian, Spanish, Portuguese, German (issue 48, set P)
                "nella norma", "nei limiti della norma", "dentro de la normalidad", "dentro da normalidade",
                "dentro dos limites da normalidade", "im normbereich", "unauffällig", "normaal",
                # Vietnamese (issue 48, set R); "không bình thường" is negated by "không"
                "bình thường",
                # Swahili (issue 48, set S), its negated "si ya kawaida" read in matching._FOREIGN_NOT_NORMAL (the
                # Russian, Arabic and Korean "normal" are left out: their negations, "не в норме", "غير طبيعي",
                # "정상이 아닙니다", are not read there, and read as "normal" they would flip)
                "ya kawaida",
                # (issue 48, set S) a structure said to behave normally ("the aorta tapers normally")
                "tapers normally", "enhances normally", "fills normally", "drains normally", "empties normally",
                "opacifies normally", "moves normally", "contracts normally", "normally sized", "normal calibre",
                "normal caliber")
ABNORMAL_WORDS = ("abnormal", "abnormality", "abnormalities", "unhealthy", "pathological", "pathology",
                  "diseased", "lesion", "lesions", "mass", "masses", "tumor", "tumour", "anomaly",
                  "suspicious", "enlarged", "anormal", "anormale", "anomalo", "anómalo", "auffällig", "不正常", "异常", "異常",
                  "bất thường")
CLARIFY_PHRASES = (
    "too blurry", "blurry", "blurred", "blur", "too noisy", "noisy", "noise", "low resolution",
    "low-resolution", "poor quality", "image quality", "poor image", "unusable", "non-diagnostic",
    "nondiagnostic", "not diagnostic", "uninterpretable", "can not be interpreted", "degraded",
    "artifact", "artefact", "please provide", "could you provide", "can you provide", "better image",
    "clearer image", "another image", "wrong anatomy", "different anatomy", "different modality",
    "different body part", "wrong body part", "underexposed", "overexposed", "under-exposed", "over-exposed",
    "cut off", "heavily compressed", "compression artifacts", "compression artefacts", "blocky", "pixelated",
    "pixellated", "downsampled", "too dark", "too bright", "motion artifact", "motion artefact", "out of focus",
    # the same in the languages models answer in
    "mauvaise qualité", "floue", "flou", "sfocata", "sfocato", "borrosa", "borroso", "unscharf", "verschwommen",
    "wazig", "размыто", "размытое", "размыт", "模糊", "ぼやけ", "흐릿",
    "correct image", "confirm the image", "wrong image", "right image", "intended image",
    "obscured by stool", "obscured by bubbles", "obscured by debris",
    # the image never arrived, or the reply asks which part to read (issue 48, set D)
    "did not come through", "not come through", "blank image", "blank gray", "blank grey", "blank square",
    "upload it again", "uploading it again", "re-upload", "reupload", "image is missing",
    "could you clarify", "can you clarify", "please clarify", "please specify", "could you specify",
    # the image shows something else than the anatomy: a window, a header, a menu over it (issue 48, set F)
    "bone window", "lung window", "lung windows", "wrong window", "soft tissue window", "image area itself is blank",
    "image is blank", "is overlaid across", "overlaid on the whole", "only the dicom header",
    # (issue 48, set P) a corrupted file and a request to upload it again, in the languages models answer in
    "file is corrupted", "file seems corrupted", "file appears corrupted", "corrupted file", "sembra corrotto",
    "è corrotto", "file corrotto", "caricarlo di nuovo", "caricarla di nuovo", "ricaricar", "semble corrompu",
    "fichier corrompu", "parece dañado", "archivo dañado", "parece corrupto", "archivo corrupto", "subirla de nuevo",
    "subirlo de nuevo", "parece corrompido", "arquivo corrompido", "enviar novamente", "scheint beschädigt",
    "datei ist beschädigt", "erneut hochladen",
)
REFER_PHRASES = (
    "can not determine", "unable to determine", "can not be determined", "can not tell", "unclear",
    "uncertain", "not sure", "indeterminate", "equivocal", "i do not know", "unknown", "can not say",
    "not possible to", "not clear", "difficult to", "hard to", "unable to assess", "unable to evaluate",
    "can not assess", "can not evaluate", "can not decide", "unable to decide", "refer", "specialist",
    "radiologist should", "opinion", "further imaging", "further evaluation", "clinical correlation",
    "can not answer", "unable to answer", "not able to", "may or may not", "yes and no", "yes or no",
    "as an ai", "as a language model", "as an artificial intelligence", "can not provide a diagnosis",
    "can not provide medical", "can not give a diagnosis", "can not diagnose", "unable to diagnose",
    "please consult", "consult a", "not qualified", "idk", "dunno", "no idea", "hard to say", "can not be sure",
    "either way", "can not call it", "can not confidently",
    # passive declines ("the cardiac size can't be reliably judged", "I can't make a determination")
    "can not be reliably", "can not be judged", "can not be assessed", "can not be evaluated",
    "can not make a determination", "unable to make a determination", "before calling it", "i am an ai",
    # the same in the languages models answer in
    "no lo sé", "no sé", "no estoy seguro", "je ne sais pas", "pas sûr", "ich weiß nicht", "nicht sicher",
    "ik weet het niet", "weet het niet", "niet zeker", "non lo so", "non sono sicuro", "não sei", "nie wiem",
    "не знаю", "не уверен", "不知道", "不确定", "わかりません", "分かりません", "모르겠습니다", "판단할 수 없습니다",
    "لا أعرف", "لا أستطيع", "नहीं पता", "bilmiyorum", "emin değilim",
    "no es posible", "não é possível", "nao e possivel", "il n'est pas possible", "nicht möglich", "non è possibile",
    "无法确定", "不能确定", "判断できません",
    # a verdict withheld until something else is given (issue 48, set F)
    # (issue 48, sets M and N) a call declined, a read handed over
    "neither confirmed nor excluded", "neither confirm nor exclude", "neither be confirmed nor", "definite answer",
    "can not confirm or rule out", "can not confirm or exclude", "not confirm or rule out",
    "correlating with clinical", "correlate with clinical",
    "formal review", "formally reported", "reviewed by a radiologist", "review by a radiologist",
    "non posso stabilire", "non posso determinare", "no puedo determinar", "no puedo establecer", "não posso estabelecer", "impossible de dire",
    "can not rule it in", "not going to give a verdict", "will not give a verdict", "can not give a verdict",
    "without the clinical picture", "without the clinical history",
    # "I wouldn't know / couldn't say" in the languages models answer in (issue 48, set H): a
    # leading "non" / "no" of these is no verdict
    "non saprei", "non posso dire", "non posso dirlo", "no sabría", "no podría decir", "je ne saurais",
    "ich könnte nicht sagen", "kann ich nicht sagen", "não saberia", "não sei dizer",
    # "I can't assess / interpret it" (issue 48, set J): a leading "non" / "no" of these is no verdict
    "non posso valutare", "non posso interpretare", "no puedo evaluar", "no puedo interpretar",
    "não posso avaliar", "não posso interpretar",
    # "please consult a doctor" in the languages models answer in (issue 48, set P)
    "consultați un medic", "să consultați", "consulte a un médico", "consulte um médico", "consultez un médecin",
    "consulti un medico", "rivolgersi a un medico", "wenden sie sich an", "raadpleeg een arts",
    # a refusal of the task ("Sorry, I can't help with interpreting endoscopy images"; issue 48, set P)
    "i can not help with", "i am unable to help with", "i am not able to help with", "can not help interpret",
    "formally graded", "certified grader", "qualified ophthalmologist", "reported formally", "graded formally",
    "nu pot stabili", "nu pot determina", "nu pot spune",
    # a call declined (issue 48, set Q: "I won't make a call from a single image")
    "will not make a call", "can not make a call", "not going to make a call", "will not make the call",
    "can not make the call", "will not make that call", "can not make that call", "will not call it",
)

# Anatomy a probe reply may name instead of the asked organ ("I can see the liver, the right kidney
# and some bowel loops" asked about the gallbladder does not address the gallbladder).
ORGAN_WORDS = (
    "liver", "spleen", "kidney", "kidneys", "pancreas", "gallbladder", "stomach", "aorta", "ivc", "vena cava",
    "bladder", "adrenal", "adrenals", "adrenal gland", "bowel", "bowel loops", "colon", "duodenum", "esophagus",
    "oesophagus", "heart", "lung", "lungs", "lung bases", "vertebra", "vertebral body", "spine", "diaphragm",
    "crus", "portal vein", "muscle", "muscles", "rib", "ribs", "uterus", "prostate", "rectum", "small bowel",
    "jejunum", "ileum", "trachea", "thyroid", "femoral head", "femoral heads", "pelvis", "psoas",
)
# An operation that removed the organ: its mention says the organ is not there now.
RESECTIONS = {
    "kidney": ("nephrectomy",), "gallbladder": ("cholecystectomy",), "spleen": ("splenectomy",),
    "pancreas": ("pancreatectomy", "whipple"), "stomach": ("gastrectomy",), "adrenal gland": ("adrenalectomy",),
    "esophagus": ("esophagectomy", "oesophagectomy"), "urinary bladder": ("cystectomy",), "bladder": ("cystectomy",),
    "colon": ("colectomy",), "uterus": ("hysterectomy",), "prostate": ("prostatectomy",), "lung": ("pneumonectomy",),
    "thyroid": ("thyroidectomy",), "liver": ("hepatectomy",),
}


# Addition (issue 48; no paper sets these): a stated probability of presence of 70% or more reads as
# a claim (a hedged affirmation, like "likely"), 30% or less as a denial, anything between as
# unclear; a confidence below 70% in what the reply says makes it unclear; a rating on a scale
# whose direction the reader cannot check decides nothing on its own.
PROBABILITY_CLAIM_AT, PROBABILITY_DENY_AT = 0.70, 0.30
# (issue 48, set S) the normal sign a reader gives in place of the verdict, as a regular expression per finding: "Both
# costophrenic angles are sharp" denies an effusion, as "blunting of the costophrenic angle" (synonyms.yaml) claims one.
# Read only where nothing else in the reply decided (matching._normal_sign).
NORMAL_SIGNS = {
    "pleural effusion": (r"\bcostophrenic (?:angles?|recess(?:es)?) (?:is |are |remains? |appears? |look |looks )?(?:sharp|crisp|clear|"
                         r"preserved|well[- ]defined)\b", r"\b(?:sharp|crisp|clear|preserved) (?:\w+ )?costophrenic (?:angles?|recess(?:es)?)\b"),
    "pneumothorax": (r"\blung markings (?:are seen |can be seen )?(?:extend|extending|reach|reaching|run|running) (?:all the way )?to the "
                     r"(?:periphery|chest wall|pleural surface|apex|apices)\b",),
}
NORMAL_SIGNS["effusion"] = NORMAL_SIGNS["pleural effusion"]
