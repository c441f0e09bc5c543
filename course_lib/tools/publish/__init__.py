"""Publishing the course: `site`, `slides` (+ `slides_fit`, `speaker_notes`), `bundle`, `prepare` (Colab cell, alt text, palette), `colab` (links), `reading_time`."""
