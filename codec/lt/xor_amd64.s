#include "textflag.h"

// func xorAVX2(ptrs *unsafe.Pointer, a *int32, na int, n int)
TEXT ·xorAVX2(SB), NOSPLIT, $0-32
	MOVQ ptrs+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ na+16(FP), CX
	MOVQ n+24(FP), DX
	MOVLQSX (SI), AX
	MOVQ    (DI)(AX*8), BX // dst
	MOVLQSX 4(SI), AX
	MOVQ    (DI)(AX*8), R8 // first source
	ADDQ    $8, SI         // SI -> a[2]
	SUBQ    $2, CX         // CX = further sources
	XORQ    R9, R9         // column offset

loop128:
	LEAQ 128(R9), AX
	CMPQ AX, DX
	JA   tail64
	VMOVDQU (R8)(R9*1), Y0
	VMOVDQU 32(R8)(R9*1), Y1
	VMOVDQU 64(R8)(R9*1), Y2
	VMOVDQU 96(R8)(R9*1), Y3
	MOVQ    CX, R10
	MOVQ    SI, R11
	TESTQ   R10, R10
	JZ      store128

src128:
	MOVLQSX (R11), AX
	MOVQ    (DI)(AX*8), R12
	VPXOR   (R12)(R9*1), Y0, Y0
	VPXOR   32(R12)(R9*1), Y1, Y1
	VPXOR   64(R12)(R9*1), Y2, Y2
	VPXOR   96(R12)(R9*1), Y3, Y3
	ADDQ    $4, R11
	DECQ    R10
	JNZ     src128

store128:
	VMOVDQU Y0, (BX)(R9*1)
	VMOVDQU Y1, 32(BX)(R9*1)
	VMOVDQU Y2, 64(BX)(R9*1)
	VMOVDQU Y3, 96(BX)(R9*1)
	ADDQ    $128, R9
	JMP     loop128

tail64:
	CMPQ R9, DX
	JAE  done
	VMOVDQU (R8)(R9*1), Y0
	VMOVDQU 32(R8)(R9*1), Y1
	MOVQ    CX, R10
	MOVQ    SI, R11
	TESTQ   R10, R10
	JZ      store64

src64:
	MOVLQSX (R11), AX
	MOVQ    (DI)(AX*8), R12
	VPXOR   (R12)(R9*1), Y0, Y0
	VPXOR   32(R12)(R9*1), Y1, Y1
	ADDQ    $4, R11
	DECQ    R10
	JNZ     src64

store64:
	VMOVDQU Y0, (BX)(R9*1)
	VMOVDQU Y1, 32(BX)(R9*1)
	ADDQ    $64, R9
	JMP     tail64

done:
	VZEROUPPER
	RET

// func xorAVX512(ptrs *unsafe.Pointer, a *int32, na int, n int, nt bool)
// As xorAVX2 with 256-byte columns; with nt the destination is written with
// non-temporal stores and must be 64-byte aligned.
TEXT ·xorAVX512(SB), NOSPLIT, $0-33
	MOVQ ptrs+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ na+16(FP), CX
	MOVQ n+24(FP), DX
	MOVBLZX nt+32(FP), R13
	MOVLQSX (SI), AX
	MOVQ    (DI)(AX*8), BX // dst
	MOVLQSX 4(SI), AX
	MOVQ    (DI)(AX*8), R8 // first source
	ADDQ    $8, SI         // SI -> a[2]
	SUBQ    $2, CX         // CX = further sources
	XORQ    R9, R9         // column offset

loop256:
	LEAQ 256(R9), AX
	CMPQ AX, DX
	JA   tail64
	VMOVDQU64 (R8)(R9*1), Z0
	VMOVDQU64 64(R8)(R9*1), Z1
	VMOVDQU64 128(R8)(R9*1), Z2
	VMOVDQU64 192(R8)(R9*1), Z3
	MOVQ      CX, R10
	MOVQ      SI, R11
	TESTQ     R10, R10
	JZ        store256

src256:
	MOVLQSX (R11), AX
	MOVQ    (DI)(AX*8), R12
	VPXORQ  (R12)(R9*1), Z0, Z0
	VPXORQ  64(R12)(R9*1), Z1, Z1
	VPXORQ  128(R12)(R9*1), Z2, Z2
	VPXORQ  192(R12)(R9*1), Z3, Z3
	ADDQ    $4, R11
	DECQ    R10
	JNZ     src256

store256:
	TESTQ R13, R13
	JNZ   nt256
	VMOVDQU64 Z0, (BX)(R9*1)
	VMOVDQU64 Z1, 64(BX)(R9*1)
	VMOVDQU64 Z2, 128(BX)(R9*1)
	VMOVDQU64 Z3, 192(BX)(R9*1)
	ADDQ      $256, R9
	JMP       loop256

nt256:
	VMOVNTDQ Z0, (BX)(R9*1)
	VMOVNTDQ Z1, 64(BX)(R9*1)
	VMOVNTDQ Z2, 128(BX)(R9*1)
	VMOVNTDQ Z3, 192(BX)(R9*1)
	ADDQ     $256, R9
	JMP      loop256

tail64:
	CMPQ R9, DX
	JAE  done
	VMOVDQU64 (R8)(R9*1), Z0
	MOVQ      CX, R10
	MOVQ      SI, R11
	TESTQ     R10, R10
	JZ        store64

src64:
	MOVLQSX (R11), AX
	MOVQ    (DI)(AX*8), R12
	VPXORQ  (R12)(R9*1), Z0, Z0
	ADDQ    $4, R11
	DECQ    R10
	JNZ     src64

store64:
	TESTQ R13, R13
	JNZ   nt64
	VMOVDQU64 Z0, (BX)(R9*1)
	ADDQ      $64, R9
	JMP       tail64

nt64:
	VMOVNTDQ Z0, (BX)(R9*1)
	ADDQ     $64, R9
	JMP      tail64

done:
	VZEROUPPER
	RET

// func sfence()
TEXT ·sfence(SB), NOSPLIT, $0-0
	SFENCE
	RET

// func prefetch(p unsafe.Pointer, n int)
// Prefetches n bytes (a multiple of 64) from p into the L2 cache.
TEXT ·prefetch(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	SHRQ $6, CX
	JZ   pfdone

pfloop:
	PREFETCHT1 (AX)
	ADDQ       $64, AX
	DECQ       CX
	JNZ        pfloop

pfdone:
	RET
