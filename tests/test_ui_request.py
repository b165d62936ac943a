"""The request panel without a browser: the request text in both languages, its options and download links."""

from __future__ import annotations

import base64

from gpuwork.ui.request import RequestPanel

OFFER_PLAN = {"model": "llama-3.1-8b", "method": "qlora", "seq_len": 2048, "batch_size": 4}


def test_request_text_in_both_languages_with_download_links() -> None:
    panel = RequestPanel(OFFER_PLAN)
    assert panel.request.summary.startswith("Fine-tuning, QLoRA")
    assert panel.text.value == panel.request.text
    href = panel.links.value.split('href="data:text/plain;charset=utf-8;base64,', 1)[1].split('"', 1)[0]
    assert base64.b64decode(href).decode("utf-8") == panel.request.text
    assert 'download="gpu-request-en.txt"' in panel.links.value and "application/json" in panel.links.value
    panel.req_lang.value = "ru"
    assert panel.text.value.startswith("Дообучение, QLoRA")
    panel.set_lang("en")
    assert panel.text.value.startswith("Fine-tuning")
    panel.budget.value = 500
    panel.rent_days.value = 30
    panel.start_date.value = "2026-12-01"
    assert panel.error is None and "December" in panel.text.value and "one month" in panel.text.value
    assert "$500" in panel.text.value
    panel.start_date.value = "tomorrow"
    assert "start_date" in panel.error and "gpuwork-error" in panel.message.value
    panel.start_date.value = ""
    panel.dataset_gb.value = 200
    assert panel.error is None and "200 GB" in panel.text.value
    panel.dataset_gb.value = -5
    assert panel.error == "dataset size -5 GB must be above 0 (0 = from tokens)"
    panel.set_lang("ru")
    assert panel.error == "размер датасета -5 ГБ должен быть больше 0 (0 — считать по токенам)"
