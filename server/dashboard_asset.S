/* dashboard_asset.S - the dashboard page (server/dashboard/index.html),
 * embedded in the binary so the daemon ships as one file. The symbols
 * srv_dashboard_html and srv_dashboard_html_end bound the bytes; the path
 * is relative to the repository root, where make runs the compiler. */
	.section .rodata
	.global srv_dashboard_html
	.global srv_dashboard_html_end
	.balign 16
srv_dashboard_html:
	.incbin "server/dashboard/index.html"
srv_dashboard_html_end:
	.byte 0
	.section .note.GNU-stack,"",@progbits
